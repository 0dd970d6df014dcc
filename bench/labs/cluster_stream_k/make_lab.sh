#!/bin/bash
# The cluster stream-K lab (README.md), here, in the repository root: compiles lab.sketch (the
# default projection kernel) into .gen/csk/lab.cu with SKETCHC and copies the runtime headers,
# so that the GPU machine needs only .gen/csk.
set -e
sketchc=${SKETCHC:-/tmp/cfg/compiler/sketchc}
out=.gen/csk
rm -rf "$out" && mkdir -p "$out"
"$sketchc" bench/labs/cluster_stream_k/lab.sketch --arch sm_90a -o "$out/lab.cu"
cp -r runtime/include "$out/include"
