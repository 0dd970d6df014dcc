"""The tall-wave-tiles lab (README.md): the default projection kernel, 192-row tiles forced,
128 x 256 forced and cuBLAS in one process, each output checked against f32 first, then
timed as CUDA-graph replays in alternating batches (bench_common.time_interleaved_ms, as the
bench times the projection rows); `olddefault` where make_lab.sh had SKETCHC_OLD.
Usage: time_tall.py LAB.so [--eager] [--adopt ROWS]: with --adopt, the old and new default
only, at the rows of file ROWS (M,N,K a line: adopt_rows.txt, the rows the rule moves)."""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench_common import time_interleaved_ms  # noqa: E402

ROWS = [(384, 4096, 4096), (384, 6144, 4096), (384, 14336, 4096), (384, 28672, 4096),
        (384, 4096, 14336), (192, 28672, 4096), (192, 14336, 4096), (448, 14336, 4096),
        (576, 14336, 4096), (640, 6144, 4096), (768, 4096, 4096), (768, 14336, 4096),
        (896, 4096, 4096), (1152, 6144, 4096), (1536, 4096, 4096)]
NAMES = ["tw_olddefault", "tw_default", "tw_128x256_s4", "tw_192x144_s4", "tw_192x144_s5", "tw_192x128_s4",
         "tw_192x128_s5", "tw_192x112_s5"]


def kernel(lib, name):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_void_p]
    return fn


def row(kernels, m, n, k, graph):
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half),
             (torch.randn(n, k, device="cuda") / k ** 0.5).half()) for _ in range(3)]
    y = torch.empty(m, n, device="cuda", dtype=torch.half)
    reference = sets[0][0].float() @ sets[0][1].float().t()
    runs = {"cuBLAS": lambda i: torch.matmul(sets[i][0], sets[i][1].t(), out=y)}
    for name, fn in kernels.items():
        def run(i, fn=fn, name=name):
            stream = torch.cuda.current_stream().cuda_stream
            x, w = sets[i]
            if fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), m, k, n, stream) != 0:
                raise RuntimeError(f"{name}: a CUDA error")
        y.fill_(float("nan"))
        run(0)
        torch.cuda.synchronize()
        err = ((y.float() - reference).norm() / reference.norm()).item()
        if not err < 1e-2:
            print(f"  {name} at {m} x {n} x {k}: relative error {err:.2e}, not timed", flush=True)
            continue
        runs[name] = run
    med = time_interleaved_ms(runs, len(sets), graph=graph)
    lib = med["cuBLAS"]
    cells = " | ".join(f"{med[name]:.4f} ({lib / med[name]:.2f}x)" if name in med else "-" for name in kernels)
    print(f"| {m} x {n} x {k} | {lib:.4f} | {cells} |", flush=True)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    graph = "--eager" not in sys.argv
    names, rows = NAMES, ROWS
    if "--adopt" in sys.argv:
        names = ["tw_olddefault", "tw_default"]
        with open(sys.argv[sys.argv.index("--adopt") + 1]) as f:
            rows = [tuple(int(v) for v in line.split(",")) for line in f if line.strip()]
    kernels = {name[3:]: kernel(lib, name) for name in names if hasattr(lib, name)}
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 alternating batches of 10 "
          f"{'graph-replayed' if graph else 'eager'} calls (cuBLAS / kernel)")
    print("| M x N x K | cuBLAS | " + " | ".join(kernels) + " |")
    print("| --- " * (2 + len(kernels)) + "|")
    for m, n, k in rows:
        row(kernels, m, n, k, graph)


if __name__ == "__main__":
    main()
