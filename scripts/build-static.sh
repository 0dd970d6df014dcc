#!/usr/bin/env bash
# Builds sketchc and sketch-opt linked statically against MLIR and LLVM
# (SKETCH_STATIC_SKETCHC=ON) in build-static/, checks with ldd that they load
# no LLVM, MLIR or C++ runtime library, and prints where sketchc is. That
# binary runs where MLIR is not installed (docs/sketchc.md). Extra arguments go
# to cmake: -DSKETCH_STATIC_LIBC=ON links the C library statically too.
#   scripts/build-static.sh [cmake options...]   (env: SKETCH_STATIC_BUILD, JOBS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SKETCH_STATIC_BUILD:-$root/build-static}
"$root/scripts/setup.sh" --deps-only
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DSKETCH_STATIC_SKETCHC=ON -DSKETCH_STATIC_LIBC=OFF "$@" >/dev/null
ninja -C "$build" -j "${JOBS:-$(nproc)}" sketchc sketch-opt

for tool in sketchc sketch-opt; do
  libs=$(ldd "$build/compiler/$tool" 2>&1 || true)
  if grep -E 'libLLVM|libMLIR|libstdc\+\+|libgcc_s|not found' <<<"$libs"; then
    echo "build-static: $tool loads the libraries above; it should link them statically" >&2
    exit 1
  fi
done
sketchc=$build/compiler/sketchc
echo "build-static: $sketchc ($(stat -c %s "$sketchc") bytes), loads:"
ldd "$sketchc" 2>&1 | sed 's/^\s*/  /' || true
