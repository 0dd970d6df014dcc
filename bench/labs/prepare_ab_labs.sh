#!/bin/bash
# Generates the prepared same-run A/B labs (not yet run on a GPU) into .gen/ab_<lab>, each a
# bench/ab.sh directory whose "new" kernels a lab's patch.py edited and whose "_ab" ones are as
# sketchc wrote them:
#   ab_conv              bench/labs/conv_k_rotation (the nhwc convolutions' k-tile order)
#   ab_attn_division     bench/labs/attention_block_start --division
#   ab_attn_prefetch     bench/labs/attention_block_start --prefetch
#   ab_attn_both         both
# Here:    SKETCHC=.gen/bin/sketchc bash bench/labs/prepare_ab_labs.sh
# Then one device call (carry the four .gen/ab_* folders):
#   bash bench/labs/run_ab_labs.sh > $OUT/labs.log 2>&1
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
sketchc=${SKETCHC:-$root/.gen/bin/sketchc}
generate() {  # generate AB_ONLY DEST PATCH ARGS...
  local only=$1 dest=$2
  shift 2
  SKETCHC=$sketchc SKETCHC_AB=$sketchc AB_ONLY=$only bash bench/ab.sh
  python3 "$@" .gen/ab/new.cu
  rm -rf "$dest" && mv .gen/ab "$dest"
}
generate bc_ .gen/ab_conv bench/labs/conv_k_rotation/patch.py
generate attn_ .gen/ab_attn_division bench/labs/attention_block_start/patch.py --division
generate attn_ .gen/ab_attn_prefetch bench/labs/attention_block_start/patch.py --prefetch
generate attn_ .gen/ab_attn_both bench/labs/attention_block_start/patch.py --division --prefetch
echo "prepared: $(ls -d .gen/ab_conv .gen/ab_attn_* | tr '\n' ' ')"
