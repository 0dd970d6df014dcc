"""The default f32 GEMM (A [M, K], B [K, N]) built by two compilers (NAME and NAME_ab,
bench/ab.sh) against torch.matmul (cuBLAS, TF32 off), in one process (CUDA graphs,
alternating batches): grids that fill the GPU (not split) and small ones (split-K on sm_90).
Every output is checked against torch's first.

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... python3 bench/labs/sgemm_split/lab.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
import sketch_gpu  # noqa: E402
from bench_common import add_checked_kernels, print_rounds  # noqa: E402

SHAPES = [(4096, 4096, 4096), (2048, 2048, 8192), (4000, 3000, 2000),  # (M, N, K)
          (256, 256, 16384), (4096, 16, 4096), (64, 4096, 4096), (512, 512, 1024)]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    names = [n for n in sketch_gpu.prototypes() if n.startswith("sgemm_split_plain")]
    for m, n, k in SHAPES:
        sets = 2
        data = [(torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda") / k ** 0.5)
                for _ in range(sets)]
        outs = {name: torch.full((m, n), float("nan"), device="cuda") for name in names}
        runs = {"cublas": lambda i: torch.matmul(*data[i])}
        ref = runs["cublas"](0)
        add_checked_kernels(runs, names, lambda name, i: sketch_gpu.kernel(name)(
            A=data[i][0], B=data[i][1], D=outs[name], M=m, N=n, K=k), outs, ref, f"{m}x{n}x{k}")
        print_rounds(f"{m}x{n}x{k}", runs, sets, "cublas", names)


if __name__ == "__main__":
    main()
