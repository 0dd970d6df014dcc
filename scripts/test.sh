#!/usr/bin/env bash
# Builds sketchc (installing what is missing) and runs every test through ctest:
# first the lit suite and the other tests that need no nvcc, then the tests that
# compile generated code with nvcc (label nvcc), and the GPU suite (skipped
# without a GPU). Then the lit suite again with sketchc and sketch-opt built
# with ASan+UBSan (scripts/test-asan.sh, build-asan/), SKETCH_SKIP_ASAN=1 leaves
# it out.
#
# CI stops a run at 5400 s, and its machines differ in speed by four times or
# more. So the script keeps to SKETCH_TEST_BUDGET seconds (default 5000): an
# nvcc test starts only while SKETCH_NVCC_MARGIN seconds (default 1200; the
# slowest took 590 to 1120 s on a slow machine) are left, and the ASan stage
# (a second full build) only when its estimate fits: three times the first
# build's time (a CI machine took 1075 s for the first build and over 2860 s
# for the sanitized one) and twice the first lit stage's. The stage is also
# stopped when the budget runs out. What it leaves out it names; a fast
# machine runs all.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=${SKETCH_TEST_BUDGET:-5000}
parallel=$(nproc)
# stage NAME: prints how long the stages took so far (CI's log shows where time goes).
stage() { echo "test: ${SECONDS}s so far; next: $1"; }
# run_one_ctest NUMBER: ctest's test NUMBER; prints its result line, and its
# output when it failed.
run_one_ctest() {
  local log=$root/build/Testing/ctest-$1.log status=0
  (cd "$root/build" && ctest --output-on-failure -I "$1,$1" >"$log" 2>&1) || status=$?
  grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | sed "s/^ */test: (${SECONDS}s) /" || true
  if ((status)); then cat "$log"; fi
  return $status
}
# run_nvcc_tests: ctest's nvcc tests, $parallel at a time, each started while the
# margin is left in the budget; fails if one failed, names those left out.
run_nvcc_tests() {
  local margin=${SKETCH_NVCC_MARGIN:-1200} failed=0 left=() number name
  while read -r number name; do
    while (($(jobs -rp | wc -l) >= parallel)); do wait -n || failed=1; done
    if ((SECONDS + margin > budget)); then
      left+=("$name")
      continue
    fi
    run_one_ctest "$number" </dev/null &
  done < <(cd "$root/build" && ctest -N -L nvcc | sed -n 's/^ *Test *#\([0-9]*\): \(.*\)$/\1 \2/p')
  while (($(jobs -rp | wc -l))); do wait -n || failed=1; done
  if ((${#left[@]})); then
    echo "test: left out ${#left[@]} nvcc tests, ${SECONDS}s spent of ${budget}s: ${left[*]}"
  fi
  return $failed
}
stage "build (scripts/setup.sh)"
"$root/scripts/setup.sh"
build_seconds=$SECONDS
stage "ctest: the lit suite and the tests that need no nvcc"
start=$SECONDS
(cd "$root/build" && ctest --output-on-failure -j "$parallel" -LE nvcc)
lit_seconds=$((SECONDS - start))
stage "ctest: the tests that compile generated code with nvcc"
run_nvcc_tests
if [ "${SKETCH_SKIP_ASAN:-0}" != 1 ]; then
  estimate=$((3 * build_seconds + 2 * lit_seconds))
  if ((SECONDS + estimate <= budget)); then
    stage "the lit suite under ASan and UBSan (estimated ${estimate}s)"
    status=0
    timeout $((budget - SECONDS)) "$root/scripts/test-asan.sh" -q || status=$?
    if ((status == 124)); then
      echo "test: the ASan and UBSan stage was stopped unfinished at ${SECONDS}s, the budget ${budget}s"
    elif ((status)); then
      exit $status
    fi
  else
    echo "test: left out the lit suite under ASan and UBSan (scripts/test-asan.sh):" \
         "${SECONDS}s spent, its estimate ${estimate}s, the budget ${budget}s"
  fi
fi
stage "none: done"
