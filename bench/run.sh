#!/bin/bash
# The benchmarks in one command, on the GPU machine: builds what
# bench/generate.sh wrote into .gen/bench into one library, then runs
# bench/bench.py, which times every case against torch in the same run and
# writes bench/RESULTS.md rows (to $OUT too when set). Arguments go to bench.py.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gen=${SKETCH_BENCH_GEN:-$root/.gen/bench}
build=${SKETCH_BENCH_BUILD:-/tmp/sketch_bench}
"$root/test/gpu/build_generated.sh" "$gen" "$build" libsketch_bench.so || exit 1
export SKETCH_GPU_LIB="$build/libsketch_bench.so" SKETCH_GPU_GEN="$gen"
# --all: every module (bench_all.py: GEMM, b2b, conv, attention) in one table and chart.
main=bench.py
if [ "${1:-}" = "--all" ]; then main=bench_all.py; shift; fi
PYTHONUNBUFFERED=1 python3 "$root/bench/$main" --commit "$(cat "$gen/COMMIT" 2>/dev/null || echo unknown)" "$@"
