"""Attention benchmark: the generated kernels against torch SDPA's FLASH_ATTENTION
and CUDNN_ATTENTION backends, f16, on the issue's shapes.

Usage: python3 bench_attention.py --lib path/to/attention_variants.so [--csv out.csv]
The library is test/gpu/attention/attention_variants.sketch compiled (see
test/gpu/test_attention.py). Times are medians of CUDA-event timings
(triton.testing.do_bench), after a check that our output matches the flash
backend's. TFLOP/s counts 4*B*H*S*L*D flops, halved when causal.
"""
import argparse
import ctypes
import math
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

SHAPES = [  # B, H, S, D, causal
    (4, 16, 4096, 64, False), (4, 16, 4096, 64, True),
    (4, 16, 4096, 128, False), (4, 16, 4096, 128, True),
    (1, 16, 16384, 128, False),
    (4, 16, 4096, 256, False), (4, 16, 4096, 256, True),
    (4, 16, 4096, 96, False), (4, 16, 4096, 96, True),  # a head dimension short of 64-column panels
]
# Grouped-query attention for bench_all.py: B, H, HK, S, D, causal.
GQA_SHAPES = [(4, 32, 8, 4096, 128, False)]
# Decoding for bench_all.py: a few query rows over many keys (grouped-query), B, H, HK, S, L,
# D; too few row tiles to fill the SMs alone (the key splits over clusters), and B = 8
# (enough row tiles: not split).
DECODE_SHAPES = [(1, 32, 8, 1, 8192, 128), (1, 32, 8, 128, 8192, 128), (8, 32, 8, 1, 4096, 128)]
# K and V stored a key per column ([D, L]) for bench_all.py: B, H, S, D, causal (SDPA
# gets them stored [L, D], the layout it takes).
KEY_COLUMN_SHAPES = [(4, 16, 4096, 64, False), (4, 16, 4096, 128, False)]


def ours(lib, name, q, k, v, o, scale, keys=None):
    """keys: L, where k is not stored [.., L, D]."""
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    b, h, s, _ = q.shape
    args = [ctypes.c_void_p(t.data_ptr()) for t in (q, k, v, o)]
    args += [ctypes.c_float(scale)] + [ctypes.c_int64(n) for n in (b, h, s, keys or k.shape[2])]
    # the stream current at each call (a CUDA graph's capture runs on its own)
    return lambda: fn(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))


def torch_sdpa(backend, q, k, v, causal, gqa=False):
    """gqa: k and v have fewer heads than q (SDPA's enable_gqa)."""
    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    return run


def time_ms(fn):
    try:
        fn()
        torch.cuda.synchronize()
        return do_bench(fn, warmup=100, rep=500, return_mode="median")
    except RuntimeError as error:  # a backend that does not take this shape
        print("  skipped:", str(error).splitlines()[0], file=sys.stderr)
        return float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--csv")
    parser.add_argument("--variants", default="w4", help="w4, or w4,w8 to time the 8-warp d=128 kernels too")
    args = parser.parse_args()
    lib = ctypes.CDLL(args.lib)
    rows = []
    for b, h, s, d, causal in SHAPES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        scale = 1.0 / math.sqrt(d)
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        kinds = ["w4"] + (["w8"] if "w8" in args.variants and d == 128 else [])
        timings = {}
        for kind in kinds:
            name = f"attn_f16_d{d}_mha_{'causal' if causal else 'full'}" + ("_w8" if kind == "w8" else "")
            if not hasattr(lib, name):  # no listed configuration of this head dimension
                continue
            run = ours(lib, name, q, k, v, o, scale)
            assert run() == 0, name
            torch.cuda.synchronize()
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            err = (o.float() - ref.float()).abs().max().item()
            assert err < 1e-2, f"{name}: max |err| {err} against the flash backend"
            timings[kind] = time_ms(run)
        flash = time_ms(torch_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal))
        cudnn = time_ms(torch_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal))
        for kind, ms in timings.items():
            rows.append((b, h, s, d, causal, kind, ms, flash, cudnn, flops))
        del q, k, v, o
    header = "B,H,S=L,D,causal,ours,ours_ms,flash_ms,cudnn_ms,ours_TFLOPs,flash_TFLOPs,cudnn_TFLOPs,ours/flash,ours/cudnn"
    lines = [header]
    for b, h, s, d, causal, kind, ms, flash, cudnn, flops in rows:
        tf = lambda t: flops / (t * 1e-3) / 1e12
        lines.append(f"{b},{h},{s},{d},{int(causal)},{kind},{ms:.3f},{flash:.3f},{cudnn:.3f},"
                     f"{tf(ms):.0f},{tf(flash):.0f},{tf(cudnn):.0f},{flash / ms:.2f},{cudnn / ms:.2f}")
    print("\n".join(lines))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("\n".join(lines) + "\n")
    print(torch.cuda.get_device_name(), "torch", torch.__version__)


if __name__ == "__main__":
    main()
