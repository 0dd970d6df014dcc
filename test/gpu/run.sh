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
start=$SECONDS
"$root/test/gpu/build_generated.sh" "$gen" "$build" libsketch_gpu_tests.so || exit 1
echo "== built in $((SECONDS - start)) s"
# The GPU suite's sketches, the examples and the attention head dimensions of the lit
# tests compiled for sm_80 as well (the suite below runs their sm_90a build): ptxas
# reports no spills. CI's machine is too slow for these files; its lit tests compile
# a few examples and smaller inputs. Whole-suite runs only, on half the cores beside the
# GPU tests (one after the other they took more than a device call's 600 s).
sm80_pid=
if [ $# -eq 0 ] && [ -x "$root/.gen/bin/sketchc" ]; then
  mkdir -p "$build/lit_inputs" && cp "$root/test/Attention/Inputs/head-dims.sketch" "$build/lit_inputs/"
  ( ARCHS=sm_80 JOBS=$(( ($(nproc) + 1) / 2 )) bash "$root/test/Emit/Inputs/check_ptxas.sh" \
      "$root/.gen/bin/sketchc" nvcc "$root/runtime/include" "$build/sm_80" "$root/test/gpu" \
      "$root/examples" "$build/lit_inputs" > "$build/sm_80.txt"
    echo $? > "$build/sm_80.status" ) &
  sm80_pid=$!
fi
export SKETCH_GPU_LIB="$build/libsketch_gpu_tests.so" SKETCH_GPU_GEN="$gen"
# The Python package's tests compile with the static sketchc generate.sh copied there.
[ -x "$root/.gen/bin/sketchc" ] && export SKETCHC="$root/.gen/bin/sketchc"
PYTHONUNBUFFERED=1 python3 "$root/test/gpu/run_tests.py" "$@"
status=$?
# The back-to-back kernels again with their sm_90a wgmma form switched off, so that the
# plan's own kernels (what runs where TMA does not apply, and on sm_80) are tested on this
# GPU too. Only on a whole-suite run (no arguments) that built them.
b2b_files=$(cd "$gen" && ls b2b_variants.cu conv_b2b.cu 2>/dev/null | sed 's/\.cu$//' | tr '\n' ' ')
if [ $# -eq 0 ] && [ -n "$b2b_files" ] && [ -f "$build/libsketch_gpu_tests.so" ]; then
  echo "== the back-to-back tests with -DSKETCH_B2B_WGMMA=0"
  SKETCH_FILES="$b2b_files" SKETCH_NVCC_FLAGS=-DSKETCH_B2B_WGMMA=0 \
    "$root/test/gpu/build_generated.sh" "$gen" "$build/b2b_plan" libsketch_b2b_plan.so || exit 1
  SKETCH_GPU_LIB="$build/b2b_plan/libsketch_b2b_plan.so" PYTHONUNBUFFERED=1 \
    python3 "$root/test/gpu/run_tests.py" -k test_b2b::,test_conv_b2b:: || status=1
fi
# Every sm_90a attention loop as ptxas scheduled it: the softmax between the issue of P V and
# the wait for it (test/Attention/Inputs/sass_overlap.py; test/Attention/softmax-beside-pv.test
# where lit runs with a cuobjdump). Whole-suite runs only.
if [ $# -eq 0 ] && command -v cuobjdump >/dev/null; then
  echo "== the softmax beside P V in the sm_90a attention kernels (cuobjdump -sass)"
  ls "$build"/*.o | xargs -P "$(nproc)" -I{} sh -c \
    'cuobjdump -sass {} > {}.sass 2>/dev/null && echo "$(basename {}): $(python3 "$0" {}.sass | tail -1)"' \
    "$root/test/Attention/Inputs/sass_overlap.py" | sort > "$build/overlap.txt"
  grep -v ': 0$' "$build/overlap.txt" && status=1
  echo "attention loops: $(grep -c ': 0$' "$build/overlap.txt") objects without a loop that lost the overlap"
elif [ $# -eq 0 ]; then
  echo "== no cuobjdump: the SASS check of the attention loops skipped"
fi
if [ -n "$sm80_pid" ]; then
  echo "== the GPU suite's sketches and the examples for sm_80 (test/Emit/Inputs/check_ptxas.sh)"
  wait "$sm80_pid"
  grep -v '^ok' "$build/sm_80.txt"
  echo "sm_80: $(grep -c '^ok' "$build/sm_80.txt") files compiled without spills, $(grep -c '^FAIL' "$build/sm_80.txt") failed"
  [ "$(cat "$build/sm_80.status" 2>/dev/null)" = 0 ] || status=1
fi
echo "== done in $((SECONDS - start)) s"
exit $status
