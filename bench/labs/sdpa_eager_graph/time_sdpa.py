"""SDPA's cuDNN and flash backends at B4 H16 S = L = 4096, D = 64 and 128, f16: eager
calls against CUDA-graph replays of the same calls (bench_common's timing), 3 rounds.
Why the attention rows' cuDNN times dropped when bench_all took each side's lower of
the two (docs/backend.md, attention)."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from bench_common import time_interleaved_ms  # noqa: E402

for d in (64, 128):
    q, k, v = (torch.randn(4, 16, 4096, d, device="cuda", dtype=torch.float16) for _ in range(3))
    runs = {}
    for backend, label in ((SDPBackend.CUDNN_ATTENTION, "cudnn"), (SDPBackend.FLASH_ATTENTION, "flash")):
        def run(i, backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v)
        runs[label] = run
    for r in range(3):
        eager = time_interleaved_ms(runs, 1)
        graph = time_interleaved_ms(runs, 1, graph=True)
        print(f"D={d} round {r}: " + ", ".join(
            f"{n} eager {eager[n]:.4f} graph {graph[n]:.4f} ms" for n in runs), flush=True)
