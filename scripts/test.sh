#!/usr/bin/env bash
# Builds sketchc (installing what is missing) and runs every test through ctest:
# first the lit suite and the other tests that need no nvcc, then the tests that
# compile generated code with nvcc (label nvcc), and the GPU suite (skipped
# without a GPU). Then the lit suite again with sketchc and sketch-opt built
# with ASan+UBSan (scripts/test-asan.sh, build-asan/), SKETCH_SKIP_ASAN=1 leaves
# it out.
#
# CI stops a run at 5400 s, and its machines differ in speed by four times or
# more. So the script keeps to SKETCH_TEST_BUDGET seconds (default 5000): the
# nvcc tests run the cheapest first, each started only where its expected time
# fits (run_nvcc_tests) and stopped at the budget, and the ASan stage
# (a second full build) only when its estimate fits: three times the first
# build's time (a CI machine took 1075 s for the first build and over 2860 s
# for the sanitized one) and twice the first lit stage's. The stage is also
# stopped when the budget runs out. What it leaves out it names; a fast
# machine runs all.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
budget=${SKETCH_TEST_BUDGET:-5000}
parallel=$(nproc)
# the build time, in seconds, of the CI machine whose nvcc test times are the tests'
# COST (test/CMakeLists.txt)
reference_build=1075
# stage NAME: prints how long the stages took so far (CI's log shows where time goes).
stage() { echo "test: ${SECONDS}s so far; next: $1"; }
# run_one_ctest NUMBER: ctest's test NUMBER, stopped when the budget runs out;
# prints its result line, and its output when it failed.
run_one_ctest() {
  local log=$root/build/Testing/ctest-$1.log status=0
  (cd "$root/build" && timeout $((budget - SECONDS)) ctest --output-on-failure -I "$1,$1" \
     >"$log" 2>&1) || status=$?
  if ((status == 124)); then
    echo "test: (${SECONDS}s) $2 stopped unfinished at the budget (${budget}s)"
    return 0
  fi
  grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | sed "s/^ */test: (${SECONDS}s) /" || true
  if ((status)); then cat "$log"; fi
  return $status
}
# nvcc_tests: "number cost name" for each of ctest's nvcc tests, the cheapest
# first (COST: seconds on the CI machine of $reference_build).
nvcc_tests() {
  (cd "$root/build" && python3 -c '
import json, re, subprocess
run = lambda *a: subprocess.run(["ctest", *a, "-L", "nvcc"], capture_output=True, text=True,
                                check=True).stdout
costs = {t["name"]: next((p["value"] for p in t.get("properties", []) if p["name"] == "COST"), 0)
         for t in json.loads(run("--show-only=json-v1"))["tests"]}
tests = re.findall(r"^ *Test *#(\d+): (.*)$", run("-N"), re.M)
for number, name in sorted(tests, key=lambda t: (costs.get(t[1], 0), int(t[0]))):
    print(number, int(costs.get(name, 0)), name)
')
}
# run_nvcc_tests: ctest's nvcc tests, the cheapest first, $parallel at a time;
# one starts only while its cost, scaled by this machine's build time against
# $reference_build and by 1.5 (nvcc ran up to 4 times slower where the build was 2.6
# times slower), fits the budget. Fails if one failed, names those left out.
run_nvcc_tests() {
  local failed=0 left=() number cost name scale
  scale=$((build_seconds > reference_build ? build_seconds : reference_build))
  while read -r number cost name; do
    while (($(jobs -rp | wc -l) >= parallel)); do wait -n || failed=1; done
    if ((SECONDS + (cost > 60 ? cost : 60) * scale * 3 / 2 / reference_build > budget)); then
      left+=("$name")
      continue
    fi
    run_one_ctest "$number" "$name" </dev/null &
  done < <(nvcc_tests)
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
