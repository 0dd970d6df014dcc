#!/bin/bash
# The lab's kernels: .gen/ab/new.cu (stash.sketch) and, for an A/B of a runtime change to
# sketch/simt.cuh, .gen/ab/old.cu (the same kernels named NAME_ab, on the header of
# git revision OLD_REV, default HEAD, copied into .gen/ab/old_sketch/ with its namespace renamed
# simt_old so that the two never share a symbol).
#   SKETCHC=... [OLD_REV=HEAD] bash bench/labs/sgemm_stash/prepare.sh
# then on the GPU machine (carry .gen/ab):
#   test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so &&
#   SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/labs/sgemm_stash/lab.py
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
SKETCHC_AB=$SKETCHC AB_ONLY=nomatch_ AB_SKETCHES="$here/stash.sketch" bash "$root/bench/ab.sh"
mkdir -p "$root/.gen/ab/old_sketch"
git -C "$root" show "${OLD_REV:-HEAD}:runtime/include/sketch/simt.cuh" |
  sed 's/namespace simt {/namespace simt_old {/; s/SKETCH_SIMT_CUH/SKETCH_SIMT_OLD_CUH/' \
  > "$root/.gen/ab/old_sketch/simt_old.cuh"
sed -i 's|"sketch/simt.cuh"|"old_sketch/simt_old.cuh"|; s/sketch::simt::/sketch::simt_old::/g' \
  "$root/.gen/ab/old.cu"
grep -c "simt_old" "$root/.gen/ab/old.cu"
