"""The cluster stream-K lab (README.md): the default projection kernel, the lab's kernel with
the rule's cluster size and tiles a cluster, the same forced to others, and cuBLAS, in one
process, in alternating rounds (the tail-slices lab's timing).
Usage: time_streamk.py LAB.so [M,M,... [N:K,N:K,...]]"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tail_slices"))
from time_slices import kernel, medians  # noqa: E402

SHAPES = [(6144, 4096), (14336, 4096), (28672, 4096), (4096, 14336)]
MS = [384, 256, 512, 768]
FORCED = [1, 2, 8]  # cluster sizes, each with the fewest tiles a cluster that fit


class Forced:
    """The lab's host function with the cluster size forced around each call."""

    def __init__(self, lib, slices, per_cluster):
        self.lib, self.slices, self.per_cluster = lib, slices, per_cluster
        self.fn = kernel(lib, "csk_f16")

    def __call__(self, *args):
        self.lib.csk_force(self.slices, self.per_cluster)
        err = self.fn(*args)
        self.lib.csk_force(0, 0)
        return err


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.csk_pick.restype = ctypes.c_int
    lib.csk_pick.argtypes = [ctypes.c_int64] * 2
    lib.csk_force.argtypes = [ctypes.c_int] * 2
    lib.csk_fit.restype = ctypes.c_int
    lib.csk_fit.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_int]
    ms = [int(v) for v in sys.argv[2].split(",")] if len(sys.argv) > 2 else MS
    shapes = ([tuple(int(v) for v in s.split(":")) for s in sys.argv[3].split(",")]
              if len(sys.argv) > 3 else SHAPES)
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 rounds of 20 calls; ratio = cuBLAS / kernel")
    print("| M x N x K | pick (c, t) | cuBLAS | default | stream-K | stream-K c=1 | c=2 | c=8 |")
    print("| --- " * 8 + "|")
    for n, k in shapes:
        for m in ms:
            tiles = (m // 128) * (n // 128)
            pick = lib.csk_pick(m, n)
            kernels = {"default": kernel(lib, "csk_default"), "stream-K": kernel(lib, "csk_f16")}
            for c in FORCED:
                kernels[f"c={c}"] = Forced(lib, c, lib.csk_fit(m, n, c))
            med = medians(kernels, m, n, k)
            lib_ms = med["cuBLAS"]
            cells = " | ".join(f"{med[name]:.4f} ({lib_ms / med[name]:.2f}x)" for name in kernels)
            print(f"| {m} x {n} x {k} | {pick // 1000}, {pick % 1000} | {lib_ms:.4f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
