#!/bin/bash
# Compiles the benchmark sketches (bench/**/*.sketch: bench/gemm, bench/projections, ...) to
# CUDA in .gen/bench/.
# Run it here, where sketchc is built; bench/run.sh runs them on the GPU machine.
#   SKETCHC=path/to/sketchc ARCH=sm_90a [SKETCH_GEN_OUT=dir] bench/generate.sh
source "$(dirname "$0")/../test/gpu/generate_common.sh"
generate_begin "$root/.gen/bench"
for sketch in $(find "$root/bench" -name '*.sketch' -not -path '*/labs/*' | sort); do
  # "# sketchc-arch: sm_90" in a sketch: its kernels take the sm_90 (mma.sync) path when the
  # run is for sm_90a, so that both GEMM paths are timed side by side (bench/gemm/make_sketches.py)
  file_arch=$arch
  if [ "$arch" = sm_90a ] && grep -q '^# sketchc-arch: sm_90 ' "$sketch"; then file_arch=sm_90; fi
  generate_one "$sketch" "$file_arch" "$(basename "$sketch" .sketch)"
done
# The attention kernels of the GPU suite, for bench_all.py (bench_attention.py's cases).
attention=$root/test/gpu/attention/attention_variants.sketch
if [ -f "$attention" ]; then generate_one "$attention" "$arch" attention_variants; fi
generate_static_sketchc
generate_end
