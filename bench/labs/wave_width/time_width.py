"""The wave-width lab (README.md): the default projection kernel, 128 x 144 / 160 / 176 tiles
forced and cuBLAS, in one process, in alternating rounds (bench/labs/tail_slices' timing).
Usage: time_width.py LAB.so"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tail_slices"))
from time_slices import kernel, row  # noqa: E402

ROWS = [(384, 6144, 4096), (384, 6144, 2048), (256, 9216, 4096), (512, 4608, 4096),
        (384, 5632, 4096), (640, 3584, 4096)]
NAMES = ["ww_default", "ww_128x144_s5", "ww_128x144_s6", "ww_128x160_s5", "ww_128x160_s6",
         "ww_128x176_s5"]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    kernels = {name[3:]: kernel(lib, name) for name in NAMES}
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 rounds of 20 calls (cuBLAS / kernel)")
    print("| M x N x K | cuBLAS | " + " | ".join(kernels) + " |")
    print("| --- " * (2 + len(kernels)) + "|")
    for m, n, k in ROWS:
        row(kernels, m, n, k)


if __name__ == "__main__":
    main()
