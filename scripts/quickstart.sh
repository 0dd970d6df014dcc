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
# The Python package (python/sketch), editable: it finds build/compiler/sketchc
# and runtime/include in this checkout. torch is needed only to call kernels.
if ! python3 -m pip --version >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] && apt_get=apt-get || apt_get="sudo apt-get"
  DEBIAN_FRONTEND=noninteractive $apt_get install -y -q python3-pip
fi
pip_install() { python3 -m pip install -q "$@" || python3 -m pip install -q --break-system-packages "$@"; }
pip_install -e "$root/python"
echo "quickstart: installed the sketch Python package ($(python3 -c 'import sketch, os; print(os.path.dirname(sketch.__file__))'))"
