#!/usr/bin/env bash
# Builds sketchc (installing what is missing) and runs every test through ctest:
# first the lit suite and the other tests that need no nvcc, then the tests that
# compile generated code with nvcc (label nvcc), and the GPU suite (skipped
# without a GPU). Then the lit suite again with sketchc and sketch-opt built
# with ASan+UBSan (scripts/test-asan.sh, build-asan/): a second full build, run
# when the time spent so far plus an estimate of that stage (the first build's
# time and twice the first lit stage's) fits in SKETCH_TEST_BUDGET seconds
# (default 5000; CI stops at 5400); otherwise the script says it left it out.
# SKETCH_SKIP_ASAN=1 always leaves it out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=${SKETCH_TEST_BUDGET:-5000}
# stage NAME: prints how long the stages took so far (CI's log shows where time goes).
stage() { echo "test: ${SECONDS}s so far; next: $1"; }
stage "build (scripts/setup.sh)"
"$root/scripts/setup.sh"
build_seconds=$SECONDS
stage "ctest: the lit suite and the tests that need no nvcc"
start=$SECONDS
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)" -LE nvcc)
lit_seconds=$((SECONDS - start))
stage "ctest: the tests that compile generated code with nvcc"
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)" -L nvcc)
if [ "${SKETCH_SKIP_ASAN:-0}" != 1 ]; then
  estimate=$((build_seconds + 2 * lit_seconds))
  if ((SECONDS + estimate <= budget)); then
    stage "the lit suite under ASan and UBSan (estimated ${estimate}s)"
    "$root/scripts/test-asan.sh" -q
  else
    echo "test: left out the lit suite under ASan and UBSan (scripts/test-asan.sh):" \
         "${SECONDS}s spent, its estimate ${estimate}s, the budget ${budget}s"
  fi
fi
stage "none: done"
