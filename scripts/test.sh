#!/usr/bin/env bash
# Builds sketchc (installing what is missing) and runs every test through ctest:
# the lit suite one test per file, and the GPU suite (skipped without a GPU).
# Then the static sketchc (scripts/test-static.sh, build/static/) against the
# ordinary one; SKETCH_SKIP_STATIC=1 leaves that out. Then the lit suite again
# with sketchc and sketch-opt built with ASan+UBSan (scripts/test-asan.sh,
# build-asan/); SKETCH_SKIP_ASAN=1 leaves that out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# stage NAME: prints how long the stage before took (CI's log shows where time goes).
stage() { echo "test: ${SECONDS}s so far; next: $1"; }
stage "build (scripts/setup.sh)"
"$root/scripts/setup.sh"
stage "ctest"
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")
if [ "${SKETCH_SKIP_STATIC:-0}" != 1 ]; then
  stage "the static sketchc (MLIR and LLVM linked in) must match build/'s output"
  "$root/scripts/test-static.sh"
fi
if [ "${SKETCH_SKIP_ASAN:-0}" != 1 ]; then
  stage "the lit suite under ASan and UBSan"
  "$root/scripts/test-asan.sh" -q
fi
stage "none: done"
