#!/bin/bash
# The persistent-tiles lab (README.md), here, in the repository root: builds a sketchc with
# persistent.patch (the build dir is rebuilt as it was after), compiles lab.sketch with it into
# .gen/ptl/lab.cu, and copies the patched runtime headers (sketch::persistent_cost) into
# .gen/ptl/include, so that the GPU machine needs only .gen/ptl.
set -e
build=${SKETCH_BUILD_DIR:-/tmp/cfg}
patch=bench/labs/persistent_tiles/persistent.patch
out=.gen/ptl
git apply "$patch"
trap 'git apply -R "$patch"; ninja -C "$build" >/dev/null' EXIT
ninja -C "$build" >/dev/null
rm -rf "$out" && mkdir -p "$out"
"$build/compiler/sketchc" bench/labs/persistent_tiles/lab.sketch --arch sm_90a -o "$out/lab.cu"
cp -r runtime/include "$out/include"
