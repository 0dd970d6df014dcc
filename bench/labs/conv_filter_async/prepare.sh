#!/bin/bash
# The f32 nchw convolutions' filter copies by 4-byte cp.async, as an A/B on one compiler: ab.sh
# generates f32_nchw.sketch twice into .gen/ab (NAME in new.cu, NAME_ab in old.cu), then new.cu's
# filter loaders get Vec = false (4-byte cp.async straight into the transposed tile, no staging
# registers; the im2col loader keeps its registers, the stores stay 16-byte).
#   SKETCHC=... bash bench/labs/conv_filter_async/prepare.sh
# then on the GPU machine (carry .gen/ab):
#   test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so &&
#   SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py --only bc_f32
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
SKETCHC_AB=$SKETCHC AB_ONLY=nomatch_ AB_SKETCHES="$here/f32_nchw.sketch" bash "$root/bench/ab.sh"
sed -i 's/KContiguousLoader<ROWS, DEPTH, THREADS, kVec> load_w(/KContiguousLoader<ROWS, DEPTH, THREADS, false> load_w(/' \
  "$root/.gen/ab/new.cu"
echo "patched loaders: $(grep -c 'THREADS, false> load_w(' "$root/.gen/ab/new.cu")"
