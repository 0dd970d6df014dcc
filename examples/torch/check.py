#!/usr/bin/env python3
"""Checks the gemm_bias_relu extension against torch on the GPU.

Random f16 inputs at several shapes (square, ragged, K not a tile multiple,
one row); every element of the output must satisfy
|D - ref| <= 1e-2 * (|ref| + rms(ref)), ref = relu(A @ B + bias) in f64.
Also checks that the binding rejects wrong dtypes, non-contiguous tensors and
mismatched shapes, and that it runs on the caller's stream.
    examples/torch/generate.sh                 # here, where sketchc is built
    python3 examples/torch/check.py            # on the GPU machine
Prints one line per check and PASSED at the end; exit status 1 on a failure.
"""
import math
import sys

import torch

import gemm_relu_ext

SHAPES = [(256, 256, 256), (1000, 1000, 1000), (127, 257, 65), (1, 384, 320), (4096, 4096, 1024)]


def random_inputs(m, n, k):
    a = torch.randn(m, k, device="cuda").half()
    b = (torch.randn(k, n, device="cuda") / math.sqrt(k)).half()
    bias = torch.randn(n, device="cuda").half()
    return a, b, bias


def check_values(ext, m, n, k):
    a, b, bias = random_inputs(m, n, k)
    d = ext.gemm_bias_relu(a, b, bias)
    torch.cuda.synchronize()
    ref = torch.relu(a.double() @ b.double() + bias.double())
    assert d.shape == (m, n) and d.dtype == torch.float16, f"got {d.shape} {d.dtype}"
    out = d.double()
    assert torch.isfinite(out).all(), f"{m}x{n}x{k}: non-finite elements"
    rms = ref.pow(2).mean().sqrt().item()
    rel = (out - ref).abs() / (ref.abs() + rms)
    worst = rel.max().item()
    assert worst < 1e-2, f"{m}x{n}x{k}: worst relative error {worst:.3g} at " \
                         f"{torch.nonzero(rel == rel.max())[0].tolist()}"
    return worst


def check_rejects(ext):
    a, b, bias = random_inputs(64, 64, 64)
    bad = {"float32 A": (a.float(), b, bias), "non-contiguous B": (a, b.t(), bias),
           "wrong bias length": (a, b, bias[:32]), "K mismatch": (a, b[:32], bias),
           "CPU A": (a.cpu(), b, bias)}
    for what, args in bad.items():
        try:
            ext.gemm_bias_relu(*args)
        except (TypeError, ValueError, RuntimeError):
            continue
        raise AssertionError(f"the binding accepted {what}")


def check_stream(ext):
    """Runs on a side stream: the result must be there once that stream is done."""
    a, b, bias = random_inputs(512, 512, 512)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        d = ext.gemm_bias_relu(a, b, bias)
    stream.synchronize()
    ref = torch.relu(a.float() @ b.float() + bias.float()).half()
    assert torch.allclose(d.float(), ref.float(), rtol=1e-2, atol=1e-2), "side-stream result differs"


def run_all(ext, log=print):
    for m, n, k in SHAPES:
        log(f"  {m}x{n}x{k}: worst relative error {check_values(ext, m, n, k):.2e}")
    check_rejects(ext)
    log("  rejects bad dtypes, layouts, shapes and devices")
    check_stream(ext)
    log("  runs on the caller's stream")


def main():
    torch.manual_seed(0)
    ext = gemm_relu_ext.load(verbose="-v" in sys.argv)
    try:
        run_all(ext)
    except AssertionError as e:
        print(f"FAILED: {e}")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
