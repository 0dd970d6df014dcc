#!/usr/bin/env bash
# Builds sketchc and sketch-opt with AddressSanitizer and UndefinedBehaviorSanitizer
# (SKETCH_SANITIZE=ON) in build-asan/ and runs the lit suite with them, all but
# the tests that compile generated code with nvcc (--param nvcc=0: the
# sanitizers do not change nvcc, and ctest ran those with build/'s sketchc).
# Any sanitizer report aborts the tool (test/lit.cfg.py sets abort_on_error), so
# it fails its test. scripts/test.sh (CI) runs it after ctest; docs/robustness.md.
#   scripts/test-asan.sh [lit options...]      (env: SKETCH_ASAN_BUILD, JOBS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SKETCH_ASAN_BUILD:-$root/build-asan}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSKETCH_SANITIZE=ON
fi
ninja -C "$build" -j "${JOBS:-$(nproc)}" sketchc sketch-opt
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv -j "${JOBS:-$(nproc)}" --param nvcc=0 "$@" "$build/test"
