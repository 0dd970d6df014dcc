#!/usr/bin/env python3
"""Writes the benchmark sketches of bench/gemm/: one kernel per tile / warps /
stages configuration, for f16 and bf16 GEMM and f16 GEMM + bias + ReLU, and the
f32 GEMM. Two files per group so that the GPU machine builds them in parallel.
Run it after changing CONFIGS (bench.py reads the same lists)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# Configurations as BMxBNxBK_w<warps>_s<stages>: the kernels' names and their directives;
# "default" has none (what sketchc picks, the row the table reports).
CONFIGS = ["default", "128x128x32_w4_s3", "128x128x32_w4_s4", "128x256x32_w8_s3", "128x256x32_w8_s4",
           "256x128x32_w8_s3", "256x128x32_w8_s4", "128x256x64_w8_s3", "256x128x64_w8_s3"]
# The mma.sync path (m16n8k16, ldmatrix, cp.async) on Hopper: kernels bg_<type>_mma_<config>,
# in files that bench/generate.sh compiles with --arch sm_90 when it builds for sm_90a, so
# that bench/run.sh times both paths in one run. (128x128x32 w4 s4 and 128x256x32 / 256x128x32
# w8 s5 were measured no faster than these on an H100: not listed.)
MMA_CONFIGS = ["default", "128x128x32_w4_s3", "128x256x32_w8_s3", "128x256x32_w8_s4", "256x128x32_w8_s4",
               "128x256x64_w8_s3", "256x128x64_w8_s3"]
# f32 SIMT tiles timed beside the default ("sgemm" is the 128x128x16 w8 s2 tile the
# default picks): any tile the rules of docs/language.md "f32 GEMM tiles" accept.
F32_CONFIGS = ["128x128x8_w8_s2", "128x256x8_w8_s2", "256x128x8_w8_s2", "128x128x16_w4_s2",
               "64x128x16_w4_s2", "128x128x32_w8_s2", "128x256x16_w8_s2", "64x64x16_w2_s2"]
MMA_MARKER = "# sketchc-arch: sm_90 (mma.sync kernels beside the sm_90a ones; bench/generate.sh)\n"
LOOP = """    for k in 0:K:
        Copy A from global to shared
        Copy B from global to shared
        Compute GEMM A, B and accumulate D
"""


def kernel(name, params, directives, epilogue=()):
    text = f"kernel {name}({params}):\n" + "".join(f"    {d}\n" for d in directives) + LOOP
    return text + "".join(f"    {e}\n" for e in epilogue) + "    Copy D from register to global\n"


def directives(config):
    """"128x256x32_w8_s4" -> its tile, warps and stages directives ("default": none)."""
    if config == "default":
        return []
    tile, warps, stages = config.split("_")
    bm, bn, bk = tile.split("x")
    return [f"tile BM = {bm}, BN = {bn}, BK = {bk}", f"warps {warps[1:]}", f"stages {stages[1:]}"]


def main():
    groups = {}
    for configs, path in [(CONFIGS, ""), (MMA_CONFIGS, "mma_")]:
        for name in configs:
            for t in ["f16", "bf16"]:
                groups.setdefault(f"bench_{t}_{path}gemm", []).append(
                    kernel(f"bg_{t}_{path}{name}", f"A: {t}[M, K], B: {t}[K, N], D: {t}[M, N]",
                           directives(name)))
    for name in CONFIGS:
        groups.setdefault("bench_f16_bias_relu", []).append(
            kernel(f"bbr_f16_{name}", "A: f16[M, K], B: f16[K, N], bias: f16[N], D: f16[M, N]",
                   directives(name), ["Compute Bias D, bias", "Compute ReLU D"]))
    groups["bench_f16_bias_gelu"] = [
        kernel("bbg_f16_default", "A: f16[M, K], B: f16[K, N], bias: f16[N], D: f16[M, N]", [],
               ["Compute Bias D, bias", "Compute GELU D"])]
    groups["bench_f32_gemm"] = [kernel(f"bg_f32_{name}", "A: f32[M, K], B: f32[K, N], D: f32[M, N]",
                                       directives(config))
                                for name, config in [("default", "default"),
                                                     ("sgemm", "128x128x16_w8_s2")] +
                                [(c, c) for c in F32_CONFIGS]]
    header = "# Benchmark kernels (bench/bench.py), written by make_sketches.py.\n\n"
    for group, kernels in groups.items():
        half = (len(kernels) + 1) // 2
        parts = [kernels[:half], kernels[half:]] if len(kernels) > 1 else [kernels]
        for i, part in enumerate(parts):
            suffix = f"_{i + 1}" if len(parts) > 1 else ""
            with open(os.path.join(HERE, f"{group}{suffix}.sketch"), "w") as f:
                marker = MMA_MARKER if "_mma_" in group else ""
                f.write(header + marker + "\n".join(part))


if __name__ == "__main__":
    main()
