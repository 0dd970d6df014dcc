#!/bin/bash
# Generates the A/B of bench/labs/winograd_nhwc_order into .gen/ab: ab.sketch's kernels by
# SKETCHC (the working tree) and by SKETCHC_AB (REV's build), the latter renamed _ab and
# pointed at REV's winograd.cuh under namespace sketch::winograd_ab (both files go into one
# library, so the two headers' structs must not share names).
#   SKETCHC=new/sketchc SKETCHC_AB=old/sketchc REV=<commit> bench/labs/winograd_nhwc_order/make_lab.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/bench/labs/winograd_nhwc_order
AB_ONLY=nomatch AB_SKETCHES=$here/ab.sketch bash "$root/bench/ab.sh"
git -C "$root" show "${REV:?REV: the old compiler commit}:runtime/include/sketch/winograd.cuh" |
  sed -e 's/namespace winograd {/namespace winograd_ab {/' -e 's/SKETCH_WINOGRAD_CUH/SKETCH_WINOGRAD_AB_CUH/g' \
  > "$root/.gen/ab/winograd_ab.cuh"
sed -i -e 's|#include "sketch/winograd.cuh"|#include "winograd_ab.cuh"|' \
  -e 's/sketch::winograd::/sketch::winograd_ab::/g' "$root/.gen/ab/old.cu"
grep -q winograd_ab "$root/.gen/ab/old.cu" || { echo "make_lab.sh: old.cu has no Winograd kernel"; exit 1; }
