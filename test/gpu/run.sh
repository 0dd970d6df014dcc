#!/bin/bash
# The GPU suite in one command, on the GPU machine: builds every .cu that
# test/gpu/generate.sh wrote into .gen/gpu into one shared library, then runs
# test/gpu/run_tests.py on it. Arguments go to run_tests.py (-k NAME filters).
#   test/gpu/run.sh [-k gemm]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${SKETCH_GPU_GEN:-$root/.gen/gpu}
build=${SKETCH_GPU_BUILD:-/tmp/sketch_gpu}
arch=$(cat "$gen/ARCH" 2>/dev/null || echo sm_90a)
gencode="arch=compute_${arch#sm_},code=$arch"
jobs=${JOBS:-$(nproc)}
mkdir -p "$build"
echo "building $(ls "$gen"/*.cu | wc -l) files for $arch with $jobs jobs"
ls "$gen"/*.cu | xargs -P "$jobs" -I{} sh -c \
  'nvcc -std=c++17 -O3 -I"$0/runtime/include" -I"$1" -gencode "$2" -Xcompiler -fPIC -c "{}" -o "$3/$(basename {} .cu).o" || echo "BUILD FAILED: {}"' \
  "$root" "$gen" "$gencode" "$build"
nvcc -shared -o "$build/libsketch_gpu_tests.so" "$build"/*.o || exit 1
export SKETCH_GPU_LIB="$build/libsketch_gpu_tests.so" SKETCH_GPU_GEN="$gen"
PYTHONUNBUFFERED=1 python3 "$root/test/gpu/run_tests.py" "$@"
