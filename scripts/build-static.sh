#!/usr/bin/env bash
# Builds sketchc and sketch-opt linked statically against MLIR and LLVM (the
# targets sketchc-static and sketch-opt-static, from the same objects as the
# ordinary tools) in build/static/, checks with ldd that they load no LLVM,
# MLIR or C++ runtime library, and prints where sketchc is. That binary runs
# where MLIR is not installed (docs/sketchc.md). Extra arguments go to cmake:
# -DSKETCH_STATIC_LIBC=ON links the C library statically too.
#   scripts/build-static.sh [cmake options...]   (env: SKETCH_BUILD_DIR, JOBS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SKETCH_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
if (($#)); then
  cmake "$build" "$@" >/dev/null
fi
ninja -C "$build" -j "${JOBS:-$(nproc)}" sketchc-static sketch-opt-static

for tool in sketchc sketch-opt; do
  libs=$(ldd "$build/static/$tool" 2>&1 || true)
  if grep -E 'libLLVM|libMLIR|libstdc\+\+|libgcc_s|not found' <<<"$libs"; then
    echo "build-static: $tool loads the libraries above; it should link them statically" >&2
    exit 1
  fi
done
sketchc=$build/static/sketchc
echo "build-static: $sketchc ($(stat -c %s "$sketchc") bytes), loads:"
ldd "$sketchc" 2>&1 | sed 's/^\s*/  /' || true
