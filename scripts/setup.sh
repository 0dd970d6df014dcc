#!/usr/bin/env bash
# Installs the build dependencies (Debian packages) when missing, then
# configures and builds sketchc in build/. Safe to run again: it only does
# what is not done yet. With --deps-only it only installs the packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SKETCH_BUILD_DIR:-$root/build}

packages=(libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools libcli11-dev cmake ninja-build g++ python3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
fi
if [ "${1:-}" = --deps-only ]; then
  exit 0
fi

# -O1: sketchc spends milliseconds on a sketch at any level, while -O3 makes
# the build (MLIR's templates) slower: EmitB2b.cpp took 376 s against 290 s on
# a slow machine.
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG"
fi
ninja -C "$build"
