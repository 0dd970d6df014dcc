#!/bin/bash
# The benchmarks in one command, on the GPU machine: builds what
# bench/generate.sh wrote into .gen/bench into one library, then runs
# bench/bench.py, which times every case against torch in the same run and
# writes bench/RESULTS.md rows (to $OUT too when set). Arguments go to bench.py.
#   bench/run.sh --ceiling   only the mma.sync ceiling (bench/ceiling), no library
#   bench/run.sh --all       every module, then the ceiling
#   bench/run.sh --projections [args]   only bench/bench_projections.py (the LLM projection
#                            GEMMs; with SKETCH_FILES='bench_projections_*' only their kernels are built)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gen=${SKETCH_BENCH_GEN:-$root/.gen/bench}
build=${SKETCH_BENCH_BUILD:-/tmp/sketch_bench}
# what mma.sync reaches with nothing else in the way (markdown table; $OUT/ceiling.md)
run_ceiling() {
  local arch
  arch=$(cat "$gen/ARCH" 2>/dev/null || echo sm_90a)
  mkdir -p "$build"
  nvcc -O3 -std=c++17 -arch="$arch" "$root/bench/ceiling/mma_sync_ceiling.cu" -o "$build/mma_sync_ceiling" || return 1
  "$build/mma_sync_ceiling" | tee "${OUT:-$build}/ceiling.md"
}
if [ "${1:-}" = "--ceiling" ]; then run_ceiling; exit; fi
# the Python package's sketchc (the decoder layer, ResNet-50, the call's host time): .gen/bin, carried
[ -x "$root/.gen/bin/sketchc" ] && export SKETCHC=$root/.gen/bin/sketchc
# --all: the Llama layer's and ResNet-50's sketch.compile builds (nvcc, about a minute on a
# fresh machine) run on the CPU beside the library build and bench_all.py, into sketch's cache
prebuild_examples() {
  PYTHONPATH="$root/python:$root/examples/llama:$root/examples/resnet" python3 -c \
    'import sketch, sketch_llama, sketch_resnet; sketch.compile(sketch_llama.SKETCH); sketch_resnet.compile_kernels()' \
    > "$build/prebuild.log" 2>&1 || echo "== prebuild of the examples failed (they build again when run): $build/prebuild.log"
}
prebuild=
if [ "${1:-}" = "--all" ]; then mkdir -p "$build"; prebuild_examples & prebuild=$!; fi
"$root/test/gpu/build_generated.sh" "$gen" "$build" libsketch_bench.so || exit 1
echo "== build: $SECONDS s"  # --all has to fit one device call (600 s); each step's end time
export SKETCH_GPU_LIB="$build/libsketch_bench.so" SKETCH_GPU_GEN="$gen"
# --all: every module (bench_all.py: GEMM, b2b, conv, attention) in one table and chart,
# then the Llama decoder layer, ResNet-50, the host time of a call and the ceiling.
main=bench.py
if [ "${1:-}" = "--all" ]; then main=bench_all.py; shift; fi
if [ "${1:-}" = "--projections" ]; then main=bench_projections.py; shift; fi
PYTHONUNBUFFERED=1 python3 "$root/bench/$main" --commit "$(cat "$gen/COMMIT" 2>/dev/null || echo unknown)" "$@"
status=$?
echo "== $main: done at $SECONDS s"
if [ "$main" = bench_all.py ]; then
  # the decoder layer, ResNet-50 and the call's host time through the Python package, then the ceiling
  wait "$prebuild"
  echo "== prebuild of the examples: done at $SECONDS s"
  PYTHONUNBUFFERED=1 python3 "$root/bench/bench_llama_layer.py" --results "$root/bench/RESULTS.md" || status=1
  echo "== bench_llama_layer.py: done at $SECONDS s"
  PYTHONUNBUFFERED=1 python3 "$root/bench/bench_resnet50.py" --results "$root/bench/RESULTS.md" || status=1
  echo "== bench_resnet50.py: done at $SECONDS s"
  PYTHONUNBUFFERED=1 python3 "$root/bench/bench_call_overhead.py" --results "$root/bench/RESULTS.md" || status=1
  echo "== bench_call_overhead.py: done at $SECONDS s"
  { printf '\n### mma.sync ceiling (bench/ceiling, same run)\n\n'; run_ceiling; } > "$build/ceiling_section.md" || status=1
  cat "$build/ceiling_section.md" >> "$root/bench/RESULTS.md"
  [ -n "${OUT:-}" ] && cp "$root/bench/RESULTS.md" "$OUT/RESULTS.md"
fi
exit $status
