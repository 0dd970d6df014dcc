"""The persistent-tiles lab (README.md): the default projection kernel (its persistent tile
picked by sketch::persistent_cost) against each candidate forced (128 x 256, the default
before; 128 x 112; 128 x 96) and cuBLAS, in one process, in alternating rounds. Each row:
the model's costs relative to 128 x 256 and the tile it picks, then the times.
Usage: time_tiles.py LAB.so [M,M,... [N:K,N:K,...]]"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tail_slices"))
from time_slices import kernel, medians  # noqa: E402  (the tail-slices lab's)

SHAPES = [(14336, 4096), (4096, 14336), (6144, 4096), (28672, 4096), (4864, 2048),
          (4096, 4096), (5120, 5120)]
MS = [256, 320, 384, 448, 512, 640, 768, 896, 1024, 1152, 1280, 1536, 2048]
# test_gemm_split's tail shapes on 132 SMs (test_split_tail)
EXTRA = [(1784, 5624, 1000), (1019, 4856, 2048), (893, 4856, 2048), (1019, 5624, 1064)]
WIDTHS = [256, 96, 48, 112]


def model(lib, m, n, k):
    costs, splits = (ctypes.c_double * 4)(), (ctypes.c_long * 4)()
    lib.lab_costs(m, n, k, costs, splits)
    limit = costs[0] * 19 / 20
    pick, best = "128x256", limit
    for width, cost in zip(WIDTHS[1:], costs[1:]):
        if cost < best:
            pick, best = f"128x{width}", cost
    text = " ".join(f"{w}:{c / costs[0]:.2f}/{s // 100000}" for w, c, s in zip(WIDTHS, costs, splits))
    return pick, text


def row(lib, kernels, m, n, k):
    med = medians(kernels, m, n, k)
    pick, costs = model(lib, m, n, k)
    best = min(kernels, key=lambda name: med[name] if name != "default" else 1e9)
    cells = " | ".join(f"{med[name]:.4f}" for name in kernels)
    print(f"| {m} x {n} x {k} | {costs} | {pick} | {best} | {med['cuBLAS']:.4f} | {cells} | "
          f"{med['128x256'] / med['default']:.3f} |", flush=True)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.lab_costs.argtypes = [ctypes.c_long] * 3 + [ctypes.c_void_p] * 2
    ms = [int(v) for v in sys.argv[2].split(",")] if len(sys.argv) > 2 else MS
    shapes = ([tuple(int(v) for v in s.split(":")) for s in sys.argv[3].split(",")]
              if len(sys.argv) > 3 else SHAPES)
    kernels = {"default": kernel(lib, "pt_k_default"), "128x256": kernel(lib, "pt_k_128x256"),
               "128x112": kernel(lib, "pt_k_128x112"), "128x96": kernel(lib, "pt_k_128x96")}
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 rounds of 20 calls; costs: "
          "width:cost relative to 128 x 256/slices; last column: 128x256 time / default's")
    print("| M x N x K | costs | picks | fastest forced | cuBLAS | " + " | ".join(kernels) +
          " | gain |")
    print("| --- " * (7 + len(kernels)) + "|")
    rows = [(m, n, k) for n, k in shapes for m in ms] + (EXTRA if len(sys.argv) <= 2 else [])
    for m, n, k in rows:
        tiles = -(-m // 128) * -(-n // 256)
        if tiles * 4 < 132 * 3:
            continue  # the small-grid forms: not this lab's
        row(lib, kernels, m, n, k)


if __name__ == "__main__":
    main()
