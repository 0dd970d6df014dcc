#!/bin/bash
# The benchmarks in one command, on the GPU machine: builds what
# bench/generate.sh wrote into .gen/bench into one library, then runs
# bench/bench.py, which times every case against torch in the same run and
# writes bench/RESULTS.md rows (to $OUT too when set). Arguments go to bench.py.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gen=${SKETCH_BENCH_GEN:-$root/.gen/bench}
build=${SKETCH_BENCH_BUILD:-/tmp/sketch_bench}
arch=$(cat "$gen/ARCH" 2>/dev/null || echo sm_90a)
gencode="arch=compute_${arch#sm_},code=$arch"
mkdir -p "$build"
# the generated files to build: all, or those matching SKETCH_FILES's patterns
list_files() {
  local pattern
  set -f
  for pattern in ${SKETCH_FILES:-*}; do set +f; ls "$gen"/$pattern.cu; set -f; done
  set +f
}
files=$(list_files)
echo "building $(echo "$files" | wc -l) files for $arch"
echo "$files" | xargs -P "${JOBS:-$(nproc)}" -I{} sh -c \
  'nvcc -std=c++17 -O3 -I"$0/runtime/include" -I"$1" -gencode "$2" -Xcompiler -fPIC -Xptxas -v -c "{}" -o "$3/$(basename {} .cu).o" 2> "$3/$(basename {} .cu).ptxas" || { cat "$3/$(basename {} .cu).ptxas"; echo "BUILD FAILED: {}"; }' \
  "$root" "$gen" "$gencode" "$build"
echo "ptxas: $(cat "$build"/*.ptxas | grep -c 'bytes spill stores') kernels, $(cat "$build"/*.ptxas | grep -cE ' [1-9][0-9]* bytes spill stores') with spills"
grep -B2 -E ' [1-9][0-9]* bytes spill stores' "$build"/*.ptxas | grep -o "function '[^']*'" | sort -u | head -20
nvcc -shared -o "$build/libsketch_bench.so" "$build"/*.o || exit 1
export SKETCH_GPU_LIB="$build/libsketch_bench.so" SKETCH_GPU_GEN="$gen"
# --all: every module (bench_all.py: GEMM, b2b, conv, attention) in one table and chart.
main=bench.py
if [ "${1:-}" = "--all" ]; then main=bench_all.py; shift; fi
PYTHONUNBUFFERED=1 python3 "$root/bench/$main" --commit "$(cat "$gen/COMMIT" 2>/dev/null || echo unknown)" "$@"
