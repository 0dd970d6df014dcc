#!/bin/bash
# Compiles every sketch of the GPU suite (test/gpu/**/*.sketch) and every
# example (examples/**/*.sketch) to CUDA in .gen/gpu/, one .cu and .h per sketch. Run it here, where sketchc is built;
# test/gpu/run.sh then builds and runs them on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a [SKETCH_GEN_OUT=dir] test/gpu/generate.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sketchc=${SKETCHC:-$root/build/compiler/sketchc}
arch=${ARCH:-sm_90a}
out=${SKETCH_GEN_OUT:-$root/.gen/gpu}
rm -rf "$out"
mkdir -p "$out"
status=0
for sketch in $(find "$root/test/gpu" -name '*.sketch' | sort); do
  name=$(basename "$sketch" .sketch)
  if ! "$sketchc" "$sketch" --arch "$arch" -o "$out/$name.cu"; then
    echo "generate.sh: sketchc failed on $sketch" >&2
    status=1
  fi
done
# The examples too (test_examples.py checks the GEMM ones), as example_NAME.cu.
for sketch in $(find "$root/examples" -name '*.sketch' | sort); do
  name=example_$(basename "$sketch" .sketch)
  if ! "$sketchc" "$sketch" --arch "$arch" -o "$out/$name.cu"; then
    echo "generate.sh: sketchc failed on $sketch" >&2
    status=1
  fi
done
# The device copy has no .git: record the commit the sources came from.
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
echo "$commit" > "$out/COMMIT"
echo "$arch" > "$out/ARCH"
echo "generated $(ls "$out"/*.cu 2>/dev/null | wc -l) files in $out (commit $commit, $arch)"
exit $status
