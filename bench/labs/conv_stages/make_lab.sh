#!/bin/bash
# The stages lab (README.md): after bench/ab.sh (AB_ONLY=bc_), recompiles .gen/ab/new.cu with
# `stages 5` on the stride-2 kernels (the `_ab` twins keep the default, 4).
#   SKETCHC=... bash bench/labs/conv_stages/make_lab.sh
set -euo pipefail
gen=${1:-.gen/ab}
sed 's/^\(kernel bc_b*f16_s2p1_default(.*\)$/\1\n    stages 5/' "$gen/defaults.sketch" > "$gen/defaults_stages.sketch"
grep -c "stages 5" "$gen/defaults_stages.sketch"
"$SKETCHC" "$gen/defaults_stages.sketch" --arch "$(cat "$gen/ARCH")" -o "$gen/new.cu"
grep -c "constexpr int STAGES = 5" "$gen/new.cu"
