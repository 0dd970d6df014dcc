#!/bin/bash
# Compiles examples/gemm_bias_relu.sketch to CUDA in .gen/torch/ (run it where
# sketchc is built); examples/torch/check.py then builds the extension and
# checks it on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a examples/torch/generate.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sketchc=${SKETCHC:-$root/build/compiler/sketchc}
arch=${ARCH:-sm_90a}
out=$root/.gen/torch
mkdir -p "$out"
"$sketchc" "$root/examples/gemm_bias_relu.sketch" --arch "$arch" -o "$out/gemm_bias_relu.cu"
echo "$arch" > "$out/ARCH"
echo "generated $out/gemm_bias_relu.cu and .h ($arch)"
