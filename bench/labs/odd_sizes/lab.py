"""Our default projection against torch.nn.functional.linear (cuBLAS) at sizes that are not
multiples of 8, beside their aligned neighbours, in one process (CUDA graphs, alternating
batches). Every output is checked against torch's first.

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... python3 bench/labs/odd_sizes/lab.py [--f32]
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
import sketch_gpu  # noqa: E402
from bench_common import add_checked_kernels, print_rounds  # noqa: E402

SHAPES = [  # (M, N, K)
    (4096, 50257, 768), (4096, 50264, 768),    # GPT-2's LM head: N odd, and N rounded to 8
    (4096, 4097, 4096), (4096, 4096, 4096),    # N odd
    (4096, 4096, 4097),                        # K odd (operand rows unaligned)
    (4000, 3001, 2000), (4000, 3000, 2000),
    (777, 1003, 515), (128, 50257, 768), (1, 50257, 768),
    (4000, 3000, 2001), (128, 4096, 4097), (1, 4096, 4097),  # K odd: the element path
]
if os.environ.get("ODD_K_ONLY"):
    SHAPES = [s for s in SHAPES if s[2] % 8]
# --f32: the odd_sgemm kernels (the SIMT path; rows of whole chunks are multiples of 4)
F32_SHAPES = [(4000, 3001, 2000), (4000, 3000, 2000), (1024, 50257, 768), (1024, 50260, 768),
              (4096, 10, 4096), (777, 1003, 515)]


def main():
    f32 = "--f32" in sys.argv
    dtype = torch.float32 if f32 else torch.bfloat16
    torch.backends.cuda.matmul.allow_tf32 = False
    prefix = "odd_sgemm" if f32 else "odd_proj"
    names = [n for n in sketch_gpu.prototypes() if n.startswith(prefix)]
    for m, n, k in F32_SHAPES if f32 else SHAPES:
        sets = 3
        data = [dict(X=torch.randn(m, k, device="cuda", dtype=dtype),
                     W=torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5)
                for _ in range(sets)]
        outs = {name: torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
                for name in names}
        runs = {"cublas": lambda i: F.linear(data[i]["X"], data[i]["W"])}
        ref = runs["cublas"](0)
        add_checked_kernels(runs, names, lambda name, i: sketch_gpu.kernel(name)(
            **data[i], Y=outs[name], M=m, N=n, K=k), outs, ref, f"{m}x{n}x{k}")
        print_rounds(f"{m}x{n}x{k}", runs, sets, "cublas", names)


if __name__ == "__main__":
    main()
