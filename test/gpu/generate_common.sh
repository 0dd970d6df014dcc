# Sourced by test/gpu/generate.sh and bench/generate.sh: the shared setup,
# one sketch's compile, and the closing record of what was generated.
#   env: SKETCHC (default build/compiler/sketchc), ARCH (sm_90a), SKETCH_GEN_OUT
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sketchc=${SKETCHC:-$root/build/compiler/sketchc}
arch=${ARCH:-sm_90a}
status=0

# generate_begin DEFAULT_OUT: sets $out and empties it
generate_begin() {
  out=${SKETCH_GEN_OUT:-$1}
  rm -rf "$out"
  mkdir -p "$out"
}

# generate_one SKETCH ARCH NAME: $out/NAME.cu (and .h); a failure is reported and remembered
generate_one() {
  if ! "$sketchc" "$1" --arch "$2" -o "$out/$3.cu"; then
    echo "$(basename "$0"): sketchc failed on $1" >&2
    status=1
  fi
}

# generate_static_sketchc: builds sketchc (scripts/setup.sh in $SKETCH_BUILD_DIR or build/,
# incremental; it links MLIR and LLVM statically) and copies it to .gen/bin/sketchc, for
# the GPU machine (no LLVM there): the Python package's tests and the decoder-layer
# benchmark compile sketches with it
generate_static_sketchc() {
  "$root/scripts/setup.sh" >/dev/null
  local built=${SKETCH_BUILD_DIR:-$root/build}/compiler/sketchc
  "$root/scripts/check-static.sh" "$built" >/dev/null
  mkdir -p "$root/.gen/bin"
  cp "$built" "$root/.gen/bin/sketchc"
  echo "copied sketchc to $root/.gen/bin/sketchc"
}

# generate_end: records the commit (the device copy has no .git) and the arch, then exits
generate_end() {
  local commit
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
  echo "$commit" > "$out/COMMIT"
  echo "$arch" > "$out/ARCH"
  echo "generated $(ls "$out"/*.cu 2>/dev/null | wc -l) files in $out (commit $commit, $arch)"
  exit $status
}
