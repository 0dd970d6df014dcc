#!/usr/bin/env bash
# Installs sketchc from a build tree into a private prefix and builds
# examples/app against it with find_package(Sketch), as a user would.
# Usage: scripts/build-app.sh [BUILD_DIR [WORK_DIR]]
#   BUILD_DIR: the sketchc build tree (default: build); WORK_DIR: where the
#   prefix (app-prefix/) and the app's build (app-build/) go (default: BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-$build}
mkdir -p "$work"
prefix=$work/app-prefix
app=$work/app-build
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S "$root/examples/app" -B "$app" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$app"
echo "build-app: built $app/mlp_layer"
