#!/bin/bash
# The GPU suite in one command, on the GPU machine: builds every .cu that
# test/gpu/generate.sh wrote into .gen/gpu into one shared library, then runs
# test/gpu/run_tests.py on it. Arguments go to run_tests.py (-k NAME filters);
# SKETCH_FILES='gemm_* example_*' builds only the matching generated files.
#   test/gpu/run.sh [-k gemm]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${SKETCH_GPU_GEN:-$root/.gen/gpu}
build=${SKETCH_GPU_BUILD:-/tmp/sketch_gpu}
arch=$(cat "$gen/ARCH" 2>/dev/null || echo sm_90a)
gencode="arch=compute_${arch#sm_},code=$arch"
jobs=${JOBS:-$(nproc)}
mkdir -p "$build"
# the generated files to build: all, or those matching SKETCH_FILES's patterns
list_files() {
  local pattern
  set -f
  for pattern in ${SKETCH_FILES:-*}; do set +f; ls "$gen"/$pattern.cu; set -f; done
  set +f
}
files=$(list_files)
echo "building $(echo "$files" | wc -l) files for $arch with $jobs jobs"
echo "$files" | xargs -P "$jobs" -I{} sh -c \
  'nvcc -std=c++17 -O3 -I"$0/runtime/include" -I"$1" -gencode "$2" -Xcompiler -fPIC -Xptxas -v -c "{}" -o "$3/$(basename {} .cu).o" 2> "$3/$(basename {} .cu).ptxas" || { cat "$3/$(basename {} .cu).ptxas"; echo "BUILD FAILED: {}"; }' \
  "$root" "$gen" "$gencode" "$build"
echo "ptxas: $(cat "$build"/*.ptxas | grep -c 'bytes spill stores') kernels, $(cat "$build"/*.ptxas | grep -cE ' [1-9][0-9]* bytes spill stores') with spills"
grep -B2 -E ' [1-9][0-9]* bytes spill stores' "$build"/*.ptxas | grep -o "function '[^']*'" | sort -u | head -20
nvcc -shared -o "$build/libsketch_gpu_tests.so" "$build"/*.o || exit 1
export SKETCH_GPU_LIB="$build/libsketch_gpu_tests.so" SKETCH_GPU_GEN="$gen"
PYTHONUNBUFFERED=1 python3 "$root/test/gpu/run_tests.py" "$@"
