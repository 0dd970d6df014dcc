#!/usr/bin/env bash
# Sets up and builds sketchc, then compiles a bundled example sketch to CUDA.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
out=$root/build/examples
mkdir -p "$out"
"$root/build/compiler/sketchc" "$root/examples/gemm_bias_relu.sketch" -o "$out/gemm_bias_relu.cu"
echo "quickstart: wrote $out/gemm_bias_relu.cu and $out/gemm_bias_relu.h"
echo "quickstart: the completed sketch:"
"$root/build/compiler/sketchc" "$root/examples/gemm_bias_relu.sketch" --emit=sketch
