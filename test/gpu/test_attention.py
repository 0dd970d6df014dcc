"""GPU tests of the attention backend against torch's scaled_dot_product_attention in f32.

The kernels come from test/gpu/attention/attention_variants.sketch, compiled into
one shared library (SKETCH_GPU_LIB, or the path given with --lib). Every test
draws fresh random inputs, poisons the output with NaN, and compares every
element with the reference: torch SDPA (math backend) on f32 copies of the
inputs, is_causal for the causal kernels (top-left aligned: row i sees keys
0..i, also when S != L), enable_gqa for the grouped-query ones.

Runs alone (`python3 test_attention.py --lib build/gpu/sketch_gpu.so`) or under
the GPU harness (run_tests.py), which calls the `test_*` functions.
"""
import ctypes
import itertools
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SIZES = [1, 17, 128, 1000, 4096]
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
# Largest |out - ref| allowed, and the largest ||out - ref|| / ||ref||: P is
# rounded to the element type before P·V, and O once when stored.
TOLERANCE = {"f16": (4e-3, 2e-3), "bf16": (3e-2, 1.2e-2)}

_lib = None


def library():
    global _lib
    if _lib is None:
        path = os.environ.get("SKETCH_GPU_LIB")
        if not path:
            raise RuntimeError("set SKETCH_GPU_LIB to the compiled attention_variants library")
        _lib = ctypes.CDLL(path)
    return _lib


def kernel_name(dtype, d, gqa, causal, warps=4):
    name = f"attn_{dtype}_d{d}_{'gqa' if gqa else 'mha'}_{'causal' if causal else 'full'}"
    return name + ("_w8" if warps == 8 else "")


def launch(name, q, k, v, o, scale, gqa):
    """Calls the generated host function; returns its cudaError_t."""
    fn = getattr(library(), name)
    fn.restype = ctypes.c_int
    b, h, s, _ = q.shape
    hk, l = k.shape[1], k.shape[2]
    sizes = [b, h, s, hk, l] if gqa else [b, h, s, l]
    args = [ctypes.c_void_p(t.data_ptr()) for t in (q, k, v, o)]
    args.append(ctypes.c_float(scale))
    args += [ctypes.c_int64(n) for n in sizes]
    args.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    return fn(*args)


def reference(q, k, v, scale, causal, gqa):
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale,
                                              is_causal=causal, enable_gqa=gqa)


def check_one(dtype, d, gqa, causal, s, l, b=2, h=4, warps=4, scale=None):
    """Runs one case; returns an error message or None."""
    hk = 2 if gqa else h
    t = DTYPES[dtype]
    q = torch.randn(b, h, s, d, device="cuda", dtype=t)
    k = torch.randn(b, hk, l, d, device="cuda", dtype=t)
    v = torch.randn(b, hk, l, d, device="cuda", dtype=t)
    o = torch.full((b, h, s, d), float("nan"), device="cuda", dtype=t)
    scale = scale if scale is not None else 1.0 / math.sqrt(d)
    name = kernel_name(dtype, d, gqa, causal, warps)
    status = launch(name, q, k, v, o, scale, gqa)
    torch.cuda.synchronize()
    if status != 0:
        return f"{name} S={s} L={l}: returned cudaError {status}"
    ref = reference(q, k, v, scale, causal, gqa)
    out = o.float()
    if not torch.isfinite(out).all():
        bad = (~torch.isfinite(out)).sum().item()
        return f"{name} S={s} L={l}: {bad} elements not finite (unwritten or NaN)"
    max_abs = (out - ref).abs().max().item()
    rel = ((out - ref).norm() / ref.norm()).item()
    atol, rtol = TOLERANCE[dtype]
    if max_abs > atol or rel > rtol:
        return f"{name} S={s} L={l}: max |err| {max_abs:.3g} (limit {atol}), rel {rel:.3g} (limit {rtol})"
    return None


def run_cases(cases):
    failures = [msg for msg in (check_one(*c) for c in cases) if msg]
    for msg in failures:
        print("FAIL", msg)
    return failures


def sweep(dtype, d):
    """All S, L in SIZES, causal and not, MHA and GQA, for one dtype and head dim."""
    cases = []
    for gqa, causal, s, l in itertools.product([False, True], [False, True], SIZES, SIZES):
        b, h = (1, 4) if max(s, l) >= 4096 else (2, 4)
        cases.append((dtype, d, gqa, causal, s, l, b, h))
    return cases


def test_f16_d64():
    assert not run_cases(sweep("f16", 64))


def test_f16_d128():
    assert not run_cases(sweep("f16", 128))


def test_bf16_d64():
    assert not run_cases(sweep("bf16", 64))


def test_bf16_d128():
    assert not run_cases(sweep("bf16", 128))


def test_eight_warps():
    cases = [("f16", 128, False, causal, s, l, 2, 4, 8)
             for causal, s, l in itertools.product([False, True], SIZES, SIZES)]
    assert not run_cases(cases)


def test_scale_and_batch():
    """A scale other than 1/sqrt(d), negative too, and more batches and heads."""
    cases = [("f16", 64, False, False, 200, 300, 3, 5, 4, 0.5),
             ("bf16", 128, True, True, 300, 200, 3, 6, 4, -0.2),
             ("f16", 128, True, False, 129, 65, 5, 8, 4, 2.0)]
    assert not run_cases(cases)


def test_rejects_bad_sizes():
    """H not a multiple of HK and L = 0 are cudaErrorInvalidValue (1), launching nothing."""
    t = torch.float16
    q = torch.randn(1, 3, 16, 64, device="cuda", dtype=t)
    k = torch.randn(1, 2, 16, 64, device="cuda", dtype=t)
    o = torch.full_like(q, float("nan"))
    assert launch("attn_f16_d64_gqa_full", q, k, k, o, 0.125, True) == 1
    k0 = torch.randn(1, 3, 0, 64, device="cuda", dtype=t)
    assert launch("attn_f16_d64_mha_full", q, k0, k0, o, 0.125, False) == 1
    torch.cuda.synchronize()
    assert torch.isnan(o.float()).all()


def main():
    if "--lib" in sys.argv:
        os.environ["SKETCH_GPU_LIB"] = sys.argv[sys.argv.index("--lib") + 1]
    torch.manual_seed(0)
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
            passed += 1
            print("PASS", name, flush=True)
        except AssertionError:
            failed += 1
            print("FAIL", name, flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
