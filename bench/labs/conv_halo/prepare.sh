#!/bin/bash
# Generates the default C64 3x3 kernel (bench/conv's bc_f16_s1p1_default) into .gen/halo.
set -euo pipefail
cd "$(dirname "$0")/../../.."
SKETCHC=${SKETCHC:-build/compiler/sketchc}
mkdir -p .gen/halo
sed -n '/^kernel bc_f16_s1p1_default/,/^    Copy Y/p' bench/conv/bench_conv_defaults.sketch > .gen/halo/c64.sketch
"$SKETCHC" .gen/halo/c64.sketch --arch sm_90a -o .gen/halo/c64.cu
