"""Batched back-to-back GEMMs against torch in one process: the grid z-slice form
(b2b_batched: A0, B0, C1 per batch index, cp.async and mma.sync) and the folded form
(b2b_batched_fold: B0, B1 shared, the batch one M; wgmma on sm_90a), from
test/gpu/b2b/b2b_variants.sketch. torch: the same chain unfused (bmm/matmul, the
epilogues, D0 rounded to f16 as the kernel does), and torch.compile of it.

  SKETCH_FILES=b2b_variants test/gpu/build_generated.sh .gen/gpu /tmp/g libg.so
  python3 bench/labs/b2b_batched/time_batched.py /tmp/g/libg.so
"""
import ctypes
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench


def ms(fn):
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def row(label, shape, kernel, sizes, chain, tensors, d1):
    """Times `kernel` (tensors, then sizes) against torch's `chain` on the same tensors
    and prints one table row; d1 is the kernel's output (the last tensor)."""
    kernel.restype = ctypes.c_int
    args = [ctypes.c_void_p(t.data_ptr()) for t in tensors + [d1]]
    args += [ctypes.c_int64(v) for v in sizes]
    ours = lambda: kernel(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))  # noqa: E731
    compiled = torch.compile(chain)
    t_ours = ms(ours)
    ref = chain(*tensors).float()
    err = ((d1.float() - ref).norm() / ref.norm()).item()
    t_eager = ms(lambda: chain(*tensors))
    t_comp = ms(lambda: compiled(*tensors))
    print(f"| {label}, err {err:.1e} | {shape} | {t_ours:.4f} | {t_eager:.4f} | {t_comp:.4f} "
          f"| {t_eager / t_ours:.2f}x | {t_comp / t_ours:.2f}x |")


def main(lib_path):
    lib = ctypes.CDLL(lib_path)
    r = lambda *s, scale=1.0: (torch.randn(*s, device="cuda") * scale).half()  # noqa: E731
    nan = lambda *s: torch.full(s, float("nan"), device="cuda", dtype=torch.half)  # noqa: E731
    print("| kernel | batch x M x K0 | ours ms | torch eager ms | torch.compile ms | eager / ours | compile / ours |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for bt, m, k0 in [(8, 4096, 256), (32, 1024, 576), (64, 333, 128)]:
        tensors = [r(bt, m, k0), r(bt, k0, 64, scale=k0 ** -0.5), r(64, 128, scale=0.125), r(128),
                   r(bt, m, 128)]  # A0, B0, B1, bias1, C1
        chain = lambda a0, b0, b1, bias, c1: torch.relu(torch.bmm(a0, b0)) @ b1 + bias + c1  # noqa: E731
        row("b2b_batched (z-slices)", f"{bt} x {m} x {k0}", lib.b2b_batched, [bt, m, k0], chain,
            tensors, nan(bt, m, 128))
    for h, bt, m, k0 in [(2, 4, 4096, 256), (4, 8, 1024, 576), (1, 64, 333, 128)]:
        tensors = [r(h, bt, m, k0), r(k0, 128, scale=k0 ** -0.5), r(128), r(128, 64, scale=128 ** -0.5),
                   r(h, bt, m, 64)]  # A0, B0, bias0, B1, C1
        chain = lambda a0, b0, bias0, b1, c1: F.gelu(a0 @ b0 + bias0) @ b1 + c1  # noqa: E731
        row("b2b_batched_fold (one M)", f"{h * bt} x {m} x {k0}", lib.b2b_batched_fold,
            [h, bt, m, k0], chain, tensors, nan(h, bt, m, 64))


if __name__ == "__main__":
    main(sys.argv[1])
