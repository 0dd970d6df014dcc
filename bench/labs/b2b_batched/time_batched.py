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


def main(lib_path):
    lib = ctypes.CDLL(lib_path)
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # noqa: E731
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    r = lambda *s, scale=1.0: (torch.randn(*s, device="cuda") * scale).half()  # noqa: E731
    print("| kernel | batch x M x K0 | ours ms | torch eager ms | torch.compile ms | eager / ours | compile / ours |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for bt, m, k0 in [(8, 4096, 256), (32, 1024, 576), (64, 333, 128)]:
        a0, b0 = r(bt, m, k0), r(bt, k0, 64, scale=k0 ** -0.5)
        b1, bias, c1 = r(64, 128, scale=0.125), r(128), r(bt, m, 128)
        d1 = torch.full((bt, m, 128), float("nan"), device="cuda", dtype=torch.half)
        fn = lib.b2b_batched
        fn.restype = ctypes.c_int
        ours = lambda: fn(ptr(a0), ptr(b0), ptr(b1), ptr(bias), ptr(c1), ptr(d1),  # noqa: E731
                          ctypes.c_int64(bt), ctypes.c_int64(m), ctypes.c_int64(k0), stream())
        chain = lambda a0, b0, b1, bias, c1: torch.relu(torch.bmm(a0, b0)) @ b1 + bias + c1  # noqa: E731
        compiled = torch.compile(chain)
        t_ours = ms(ours)
        ref = chain(a0, b0, b1, bias, c1)
        err = ((d1.float() - ref.float()).norm() / ref.float().norm()).item()
        t_eager = ms(lambda: chain(a0, b0, b1, bias, c1))
        t_comp = ms(lambda: compiled(a0, b0, b1, bias, c1))
        print(f"| b2b_batched (z-slices), err {err:.1e} | {bt} x {m} x {k0} | {t_ours:.4f} | {t_eager:.4f} "
              f"| {t_comp:.4f} | {t_eager / t_ours:.2f}x | {t_comp / t_ours:.2f}x |")
    for h, bt, m, k0 in [(2, 4, 4096, 256), (4, 8, 1024, 576), (1, 64, 333, 128)]:
        a0, b0, bias0 = r(h, bt, m, k0), r(k0, 128, scale=k0 ** -0.5), r(128)
        b1, c1 = r(128, 64, scale=128 ** -0.5), r(h, bt, m, 64)
        d1 = torch.full((h, bt, m, 64), float("nan"), device="cuda", dtype=torch.half)
        fn = lib.b2b_batched_fold
        fn.restype = ctypes.c_int
        ours = lambda: fn(ptr(a0), ptr(b0), ptr(bias0), ptr(b1), ptr(c1), ptr(d1),  # noqa: E731
                          ctypes.c_int64(h), ctypes.c_int64(bt), ctypes.c_int64(m), ctypes.c_int64(k0),
                          stream())
        chain = lambda a0, b0, bias0, b1, c1: F.gelu(a0 @ b0 + bias0) @ b1 + c1  # noqa: E731
        compiled = torch.compile(chain)
        t_ours = ms(ours)
        ref = chain(a0, b0, bias0, b1, c1)
        err = ((d1.float() - ref.float()).norm() / ref.float().norm()).item()
        t_eager = ms(lambda: chain(a0, b0, bias0, b1, c1))
        t_comp = ms(lambda: compiled(a0, b0, bias0, b1, c1))
        print(f"| b2b_batched_fold (one M), err {err:.1e} | {h * bt} x {m} x {k0} | {t_ours:.4f} | {t_eager:.4f} "
              f"| {t_comp:.4f} | {t_eager / t_ours:.2f}x | {t_comp / t_ours:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1])
