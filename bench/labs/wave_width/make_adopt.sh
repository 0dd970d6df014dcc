#!/bin/bash
# The wave-width lab's adoption check (README.md), here, in the repository root: adopt.sketch
# compiled by SKETCHC (with the 128 x 144 wave tile) and its default kernel by SKETCHC_OLD (the
# commit before, renamed wa_old), built (nvcc, sm_90a) into .gen/wa/wa.so for the GPU machine.
set -e
new=${SKETCHC:-/tmp/cfg/compiler/sketchc}
old=${SKETCHC_OLD:?the sketchc of the commit before}
out=.gen/wa
rm -rf "$out" && mkdir -p "$out"
"$new" bench/labs/wave_width/adopt.sketch --arch sm_90a -o "$out/new.cu"
sed 's/^kernel wa_new(/kernel wa_old(/' bench/labs/wave_width/adopt.sketch |
  awk '/^kernel wa_128x144/ { exit } { print }' > "$out/old.sketch"
"$old" "$out/old.sketch" --arch sm_90a -o "$out/old.cu"
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda \
  -Iruntime/include -I"$out" -o "$out/wa.so" "$out/new.cu" "$out/old.cu"
