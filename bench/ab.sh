#!/bin/bash
# Generates a same-run A/B (bench/bench_ab.py) of the default GEMM, projection, nhwc convolution
# and attention kernels: each compiled by SKETCHC (the working tree's) and by SKETCHC_AB (another
# build, e.g. of the last commit), the latter's kernels renamed NAME_ab, into .gen/ab.
#   SKETCHC=new/sketchc SKETCHC_AB=old/sketchc [AB_ONLY=attn_] [AB_SKETCHES="a.sketch ..."] bench/ab.sh
# (AB_ONLY: only the kernels whose names contain it; AB_SKETCHES: every kernel of these files
# too, e.g. bench/labs/epilogue_full_reads.sketch, whose be_ kernels bench_ab.py knows)
# then on the GPU machine (carry .gen/ab):
#   test/gpu/build_generated.sh .gen/ab /tmp/ab libab.so &&
#   SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 bench/bench_ab.py
source "$(dirname "$0")/../test/gpu/generate_common.sh"
generate_begin "$root/.gen/ab"
defaults=$out/defaults.sketch
# the *_default kernels of the GEMM benchmarks, the 16-bit nhwc convolution ones and attention's
# (MHA and GQA)
python3 - "$root" "${AB_ONLY:-}" > "$defaults" <<'PY'
import re, sys
root, only = sys.argv[1], sys.argv[2]
files = [f"{root}/bench/gemm/bench_{n}_1.sketch" for n in ("f16_gemm", "bf16_gemm", "f16_bias_relu")]
files.append(f"{root}/bench/gemm/bench_f16_bias_gelu.sketch")
files.append(f"{root}/bench/conv/bench_conv_defaults.sketch")
files.append(f"{root}/bench/attention/attn_defaults.sketch")
files += [f"{root}/bench/projections/bench_projections_{t}.sketch" for t in ("f16", "bf16")]
for path in files:
    for block in re.split(r"\n(?=kernel )", open(path).read()):
        m = re.match(r"kernel (bg_(f16|bf16)_default|bb[rg]_f16_default|bp_(f16|bf16)_default"
                     r"|bc_(f16|bf16)_s\dp\d_default|attn_f16_d\d+_(mha|gqa)_(full|causal)_default)\(",
                     block)
        if m and only in m.group(1):
            print(block.rstrip() + "\n")
PY
for extra in ${AB_SKETCHES:-}; do cat "$extra" >> "$defaults"; done
generate_one "$defaults" "$arch" new
sed 's/^kernel \([a-z0-9_]*\)(/kernel \1_ab(/' "$defaults" > "$out/defaults_ab.sketch"
sketchc=$SKETCHC_AB generate_one "$out/defaults_ab.sketch" "$arch" old
generate_end
