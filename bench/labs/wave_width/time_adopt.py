"""The wave-width lab's adoption check (README.md): the default projection kernel with the
128 x 144 wave tile (new) against the default before it (old), the tile forced and cuBLAS, in
one process, in alternating rounds (bench/labs/tail_slices' timing), at the rows where the
host rule's pick moves to 128 x 144 (small grids by wave rows; persistent grids by
sketch::persistent_cost on 132 SMs) and at rows where it should not.
Usage: time_adopt.py WA.so"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tail_slices"))
from time_slices import kernel, medians  # noqa: E402

SMALL_GRID = [(384, 6144, 4096), (384, 6144, 2048), (256, 9216, 4096), (512, 4608, 4096),
              (384, 5632, 4096), (640, 3584, 4096)]
PERSISTENT = [(640, 14336, 4096), (1152, 4096, 14336), (768, 6144, 4096), (1152, 6144, 4096),
              (1536, 6144, 4096), (896, 4864, 2048), (1152, 4096, 4096), (896, 5120, 5120),
              (1280, 5120, 5120), (640, 11008, 4096), (1152, 8192, 8192), (1536, 3072, 4096),
              (3072, 3072, 4096), (320, 12288, 4096), (384, 12288, 4096), (768, 12288, 4096),
              (388, 12792, 2048), (893, 4856, 2048), (1019, 5624, 1064)]
UNMOVED = [(128, 4096, 4096), (384, 4096, 4096), (384, 14336, 4096), (384, 28672, 4096),
           (384, 4096, 14336), (4096, 4096, 4096)]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    kernels = {"new": kernel(lib, "wa_new"), "old": kernel(lib, "wa_old"),
               "128x144": kernel(lib, "wa_128x144")}
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 rounds of 20 calls")
    print("| rows | M x N x K | cuBLAS | new | old | 128x144 forced | old / new | cuBLAS / new |")
    print("| --- " * 8 + "|")
    for group, rows in [("small grid", SMALL_GRID), ("persistent", PERSISTENT),
                        ("unmoved", UNMOVED)]:
        for m, n, k in rows:
            med = medians(kernels, m, n, k)
            print(f"| {group} | {m} x {n} x {k} | {med['cuBLAS']:.4f} | {med['new']:.4f} | "
                  f"{med['old']:.4f} | {med['128x144']:.4f} | {med['old'] / med['new']:.3f} | "
                  f"{med['cuBLAS'] / med['new']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
