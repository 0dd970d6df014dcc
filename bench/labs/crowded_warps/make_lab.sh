#!/bin/bash
# The crowded-warps lab (README.md), here, in the repository root: lab.sketch for sm_90 with
# --warps 8 (NAME, new.cu) and --warps 4 (NAME_ab, old.cu: sm_80's default warps; sm_90's
# default is 8) into .gen/ab.
set -euo pipefail
sketchc=${SKETCHC:-/tmp/cfg/compiler/sketchc}
lab=bench/labs/crowded_warps
rm -rf .gen/ab && mkdir -p .gen/ab
"$sketchc" $lab/lab.sketch --arch sm_90 --warps 8 -o .gen/ab/new.cu
sed 's/^kernel \([a-z0-9_]*\)(/kernel \1_ab(/' $lab/lab.sketch > .gen/ab/lab_ab.sketch
"$sketchc" .gen/ab/lab_ab.sketch --arch sm_90 --warps 4 -o .gen/ab/old.cu
echo sm_90 > .gen/ab/ARCH
git rev-parse --short HEAD > .gen/ab/COMMIT
