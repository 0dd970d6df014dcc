#!/bin/bash
# The crowded-fragments lab (README.md), here, in the repository root: builds a sketchc with
# crowded.patch (into /tmp/sketchc_crowded; the build dir is rebuilt as it was after), then
# bench/ab.sh compiles lab.sketch for sm_90 with it (NAME) and with the build's own (NAME_ab)
# into .gen/ab.
set -e
build=${SKETCH_BUILD_DIR:-/tmp/cfg}
patch=bench/labs/crowded_fragments/crowded.patch
git apply "$patch"
trap 'git apply -R "$patch"; ninja -C "$build" >/dev/null' EXIT
ninja -C "$build" >/dev/null
cp "$build/compiler/sketchc" /tmp/sketchc_crowded
git apply -R "$patch"
trap - EXIT
ninja -C "$build" >/dev/null
SKETCHC=/tmp/sketchc_crowded SKETCHC_AB="$build/compiler/sketchc" ARCH=sm_90 AB_ONLY=none_of_the_defaults \
  AB_SKETCHES=bench/labs/crowded_fragments/lab.sketch bash bench/ab.sh
