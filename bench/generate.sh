#!/bin/bash
# Compiles the benchmark sketches (bench/**/*.sketch) to CUDA in .gen/bench/.
# Run it here, where sketchc is built; bench/run.sh runs them on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a [SKETCH_GEN_OUT=dir] bench/generate.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sketchc=${SKETCHC:-$root/build/compiler/sketchc}
arch=${ARCH:-sm_90a}
out=${SKETCH_GEN_OUT:-$root/.gen/bench}
rm -rf "$out"
mkdir -p "$out"
status=0
for sketch in $(find "$root/bench" -name '*.sketch' | sort); do
  # "# sketchc-arch: sm_90" in a sketch: its kernels take the sm_90 (mma.sync) path when the
  # run is for sm_90a, so that both GEMM paths are timed side by side (bench/gemm/make_sketches.py)
  file_arch=$arch
  if [ "$arch" = sm_90a ] && grep -q '^# sketchc-arch: sm_90 ' "$sketch"; then file_arch=sm_90; fi
  if ! "$sketchc" "$sketch" --arch "$file_arch" -o "$out/$(basename "$sketch" .sketch).cu"; then
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
