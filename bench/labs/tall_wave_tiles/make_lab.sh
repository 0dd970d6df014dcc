#!/bin/bash
# The tall-wave-tiles lab (README.md), here, in the repository root: compiles lab.sketch with
# SKETCHC and, where SKETCHC_OLD names another compiler, its default kernel renamed
# tw_olddefault with that one; builds both (nvcc, sm_90a) into .gen/tw/tw.so, which the GPU
# machine runs as it is.
set -e
sketchc=${SKETCHC:-/tmp/cfg/compiler/sketchc}
out=.gen/tw
rm -rf "$out" && mkdir -p "$out"
"$sketchc" bench/labs/tall_wave_tiles/lab.sketch --arch sm_90a -o "$out/lab.cu"
sources="$out/lab.cu"
if [ -n "${SKETCHC_OLD:-}" ]; then
  sed -n '/^kernel tw_default(/,$p' bench/labs/tall_wave_tiles/lab.sketch |
    sed 's/^kernel tw_default(/kernel tw_olddefault(/' > "$out/old.sketch"
  "$SKETCHC_OLD" "$out/old.sketch" --arch sm_90a -o "$out/old.cu"
  sources="$sources $out/old.cu"
fi
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda -Xptxas -v \
  -Iruntime/include -I"$out" -o "$out/tw.so" $sources 2> "$out/ptxas.log"
echo "$(grep -c 'Compiling entry' "$out/ptxas.log") kernels, $(grep -c ' [1-9][0-9]* bytes spill' "$out/ptxas.log") with spills"
