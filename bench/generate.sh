#!/bin/bash
# Compiles the benchmark sketches (bench/**/*.sketch) to CUDA in .gen/bench/.
# Run it here, where sketchc is built; bench/run.sh runs them on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a bench/generate.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sketchc=${SKETCHC:-$root/build/compiler/sketchc}
arch=${ARCH:-sm_90a}
out=$root/.gen/bench
rm -rf "$out"
mkdir -p "$out"
status=0
for sketch in $(find "$root/bench" -name '*.sketch' | sort); do
  if ! "$sketchc" "$sketch" --arch "$arch" -o "$out/$(basename "$sketch" .sketch).cu"; then
    echo "bench/generate.sh: sketchc failed on $sketch" >&2
    status=1
  fi
done
# The attention kernels of the GPU suite, for bench_all.py (bench_attention.py's cases).
attention=$root/test/gpu/attention/attention_variants.sketch
if [ -f "$attention" ] && ! "$sketchc" "$attention" --arch "$arch" -o "$out/attention_variants.cu"; then
  echo "bench/generate.sh: sketchc failed on $attention" >&2
  status=1
fi
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
echo "$commit" > "$out/COMMIT"
echo "$arch" > "$out/ARCH"
echo "generated $(ls "$out"/*.cu 2>/dev/null | wc -l) files in $out (commit $commit, $arch)"
exit $status
