"""The f32 GEMM's default kernels on the working tree's sketch/simt.cuh (`ss_*`) and on an older
one (`ss_*_ab`, prepare.sh) against cuBLAS (TF32 off) in one process: B stored [K, N]
(torch.matmul) and W stored [N, K] (F.linear), aligned and odd sizes. Every output is
checked against cuBLAS's first.

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... python3 bench/labs/sgemm_stash/lab.py [--profile]

--profile: each kernel once at 4096^3, for ncu (run.sh). SS_NAMES=a,b,..: only these kernels.
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

SHAPES = [(4096, 4096, 4096), (4000, 3000, 2000), (4095, 4095, 4095), (1024, 50257, 768),
          (4096, 10, 4096), (777, 1003, 515)]  # (M, N, K)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    profile = "--profile" in sys.argv
    for layout in ("nn", "nt"):
        only = os.environ.get("SS_NAMES", "").split(",")
        names = [n for n in sketch_gpu.prototypes()
                 if n.startswith(f"ss_{layout}") and (only == [""] or n in only)]
        for m, n, k in SHAPES[:1] if profile else SHAPES:
            sets = 3
            x = [torch.randn(m, k, device="cuda") for _ in range(sets)]
            w = [torch.randn(k, n, device="cuda") / k ** 0.5 if layout == "nn"
                 else torch.randn(n, k, device="cuda") / k ** 0.5 for _ in range(sets)]
            outs = {name: torch.full((m, n), float("nan"), device="cuda") for name in names}
            if layout == "nn":
                runs = {"cublas": lambda i: torch.matmul(x[i], w[i])}
                call = lambda name, i: sketch_gpu.kernel(name)(A=x[i], B=w[i], D=outs[name],
                                                               M=m, N=n, K=k)
            else:
                runs = {"cublas": lambda i: F.linear(x[i], w[i])}
                call = lambda name, i: sketch_gpu.kernel(name)(X=x[i], W=w[i], Y=outs[name],
                                                               M=m, N=n, K=k)
            ref = runs["cublas"](0)
            label = f"{layout} {m}x{n}x{k}"
            add_checked_kernels(runs, names, call, outs, ref, label)
            if not profile:
                print_rounds(label, runs, sets, "cublas", names)


if __name__ == "__main__":
    main()
