#!/bin/bash
# The wave-width lab (README.md), here, in the repository root: compiles lab.sketch with SKETCHC
# and builds it (nvcc, sm_90a) into .gen/ww/ww.so, which the GPU machine runs as it is.
set -e
sketchc=${SKETCHC:-/tmp/cfg/compiler/sketchc}
out=.gen/ww
rm -rf "$out" && mkdir -p "$out"
"$sketchc" bench/labs/wave_width/lab.sketch --arch sm_90a -o "$out/lab.cu"
nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -lcuda \
  -Iruntime/include -I"$out" -o "$out/ww.so" "$out/lab.cu"
