#!/usr/bin/env bash
# Installs sketchc from a build tree into a private prefix and builds
# examples/app against it with find_package(Sketch), as a user would.
# Usage: scripts/build-app.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
prefix=$build/app-prefix
app=$build/app-build
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S "$root/examples/app" -B "$app" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$app"
echo "build-app: built $app/mlp_layer"
