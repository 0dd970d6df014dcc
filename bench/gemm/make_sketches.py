#!/usr/bin/env python3
"""Writes the benchmark sketches of bench/gemm/: one kernel per tile / warps /
stages configuration, for f16 and bf16 GEMM and f16 GEMM + bias + ReLU, and the
f32 GEMM. Two files per group so that the GPU machine builds them in parallel.
Run it after changing CONFIGS (bench.py reads the same list)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {  # name: (tile, warps, stages)
    "128x128x32_w4_s3": ("BM = 128, BN = 128, BK = 32", 4, 3),
    "128x128x32_w4_s4": ("BM = 128, BN = 128, BK = 32", 4, 4),
    "128x256x32_w8_s3": ("BM = 128, BN = 256, BK = 32", 8, 3),
    "128x256x32_w8_s4": ("BM = 128, BN = 256, BK = 32", 8, 4),
    "256x128x32_w8_s3": ("BM = 256, BN = 128, BK = 32", 8, 3),
    "256x128x32_w8_s4": ("BM = 256, BN = 128, BK = 32", 8, 4),
    "128x256x64_w8_s3": ("BM = 128, BN = 256, BK = 64", 8, 3),
    "256x128x64_w8_s3": ("BM = 256, BN = 128, BK = 64", 8, 3),
}
# The mma.sync path (m16n8k16, ldmatrix, cp.async) on Hopper: kernels bg_<type>_mma_<config>,
# in files that bench/generate.sh compiles with --arch sm_90 when it builds for sm_90a, so
# that bench/run.sh times both paths in one run. (128x128x32 w4 s4 and 128x256x32 / 256x128x32
# w8 s5 were measured no faster than these on an H100: not listed.)
MMA_CONFIGS = {
    "128x128x32_w4_s3": ("BM = 128, BN = 128, BK = 32", 4, 3),
    "128x256x32_w8_s3": ("BM = 128, BN = 256, BK = 32", 8, 3),
    "128x256x32_w8_s4": ("BM = 128, BN = 256, BK = 32", 8, 4),
    "256x128x32_w8_s4": ("BM = 256, BN = 128, BK = 32", 8, 4),
    "128x256x64_w8_s3": ("BM = 128, BN = 256, BK = 64", 8, 3),
    "256x128x64_w8_s3": ("BM = 256, BN = 128, BK = 64", 8, 3),
}
MMA_MARKER = "# sketchc-arch: sm_90 (mma.sync kernels beside the sm_90a ones; bench/generate.sh)\n"
LOOP = """    for k in 0:K:
        Copy A from global to shared
        Copy B from global to shared
        Compute GEMM A, B and accumulate D
"""


def kernel(name, params, directives, epilogue=()):
    text = f"kernel {name}({params}):\n" + "".join(f"    {d}\n" for d in directives) + LOOP
    return text + "".join(f"    {e}\n" for e in epilogue) + "    Copy D from register to global\n"


def main():
    groups = {}
    for name, (tile, warps, stages) in CONFIGS.items():
        d = [f"tile {tile}", f"warps {warps}", f"stages {stages}"]
        for t in ["f16", "bf16"]:
            groups.setdefault(f"bench_{t}_gemm", []).append(
                kernel(f"bg_{t}_{name}", f"A: {t}[M, K], B: {t}[K, N], D: {t}[M, N]", d))
        groups.setdefault("bench_f16_bias_relu", []).append(
            kernel(f"bbr_f16_{name}", "A: f16[M, K], B: f16[K, N], bias: f16[N], D: f16[M, N]", d,
                   ["Compute Bias D, bias", "Compute ReLU D"]))
    for name, (tile, warps, stages) in MMA_CONFIGS.items():
        d = [f"tile {tile}", f"warps {warps}", f"stages {stages}"]
        for t in ["f16", "bf16"]:
            groups.setdefault(f"bench_{t}_mma_gemm", []).append(
                kernel(f"bg_{t}_mma_{name}", f"A: {t}[M, K], B: {t}[K, N], D: {t}[M, N]", d))
    groups["bench_f32_gemm"] = [kernel("bg_f32_sgemm", "A: f32[M, K], B: f32[K, N], D: f32[M, N]",
                                       ["tile BM = 128, BN = 128, BK = 16", "warps 8", "stages 2"])]
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
