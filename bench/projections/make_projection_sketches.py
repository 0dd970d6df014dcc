#!/usr/bin/env python3
"""Writes the benchmark sketches of bench/projections/ (bench/bench_projections.py):
Y = X W^T with W as nn.Linear stores it ([N, K]), f16 and bf16. "default" has no
directives (what sketchc picks: its own tile and, for small grids, the split-K form
by the host function's rule); the others are listed configurations: one tile with
`split_k 1` (that tile alone) or `split_k N` (always the split form, N K slices).
One file per type. Run it after changing CONFIGS (bench_projections.py reads it)."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# BMxBNxBK_s<stages>_k<split_k>: the kernels' names and their directives (sm_90a: wgmma
# tiles, 4 warps a 64-row warpgroup). Those best on some row of the full runs at 99d0cbf
# and 546dee3 (2026-12-01), and 64x64 unsplit; the 11 never best there were dropped so that
# bench/run.sh --all fits one device call (projections took 207 s of its 590).
CONFIGS = ["default", "128x256x64_s4_k1", "128x128x64_s4_k1", "64x64x64_s8_k2", "64x64x64_s8_k1",
           "64x128x64_s8_k1", "64x96x64_s8_k1", "64x96x64_s8_k2", "128x64x64_s8_k1",
           "128x64x64_s8_k2", "128x48x64_s8_k1"]
TYPES = ["f16", "bf16"]


def directives(config):
    """"64x128x64_s4_k4" -> its tile, warps, stages and split_k directives ("default": none)."""
    if config == "default":
        return []
    tile, stages, split = config.split("_")
    bm, bn, bk = tile.split("x")
    return [f"tile BM = {bm}, BN = {bn}, BK = {bk}", f"warps {int(bm) // 16}",
            f"stages {stages[1:]}", f"split_k {split[1:]}"]


def kernel(t, config):
    lines = [f"kernel bp_{t}_{config}(X: {t}[M, K], W: {t}[N, K], Y: {t}[M, N]):"]
    lines += [f"    {d}" for d in directives(config)]
    lines += ["    for k in 0:K:", "        Copy X from global to shared",
              "        Copy W from global to shared", "        Compute GEMM X, W^T and accumulate Y",
              "    Copy Y from register to global"]
    return "\n".join(lines) + "\n"


def main():
    header = "# LLM projection kernels (bench/bench_projections.py), written by make_projection_sketches.py.\n\n"
    for t in TYPES:
        with open(os.path.join(HERE, f"bench_projections_{t}.sketch"), "w") as f:
            f.write(header + "\n".join(kernel(t, c) for c in CONFIGS))


if __name__ == "__main__":
    main()
