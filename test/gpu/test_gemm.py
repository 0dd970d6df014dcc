"""GPU tests of the tensor-core GEMM kernels of test/gpu/gemm/*.sketch.

Every case draws fresh random inputs (never zeros), fills the output with NaN,
calls the generated host function on the current stream and compares every
element with an f64 reference computed by torch from the same (rounded) inputs:
    |out - ref| <= rtol * |ref| + rtol * rms(ref)
with rtol = 1e-2 for f16/bf16 outputs (one rounding to the output type, plus
f32 accumulation) and 1e-4 for f32 outputs. The rms term keeps elements that
cancel to nearly zero from failing on absolute errors far below the output's
precision. Sizes: 1x1x1, 127x257x65, unaligned and aligned partial tiles,
4000x3000x2000 and 4096x4096x4096; misaligned base pointers take the element
path; bad arguments return cudaErrorInvalidValue without writing.
"""
import glob
import math
import os
import re

import torch
import torch.nn.functional as F

import sketch_gpu

SKETCHES = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "gemm",
                                         "*.sketch")))
SCALARS = {"alpha": 0.75, "beta": -1.25, "slope": 0.1}
TOLERANCE = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-4}


def relu(x):
    return x.clamp(min=0)


def leaky(x, s):
    return torch.where(x >= 0, x, s * x)


def expr(acc, t, s):
    a, b = s["alpha"], s["beta"]
    first = torch.maximum(relu(a * acc + b * t["C"]) - t["bias"], torch.tensor(-0.5, dtype=acc.dtype,
                                                                               device=acc.device))
    return first + torch.minimum(torch.exp(-acc * acc), torch.tanh(acc)) / 2 + leaky(acc, 0.1)


# The epilogue of each kernel, on the f64 product `acc`, f64 tensors t and scalars s.
EPILOGUES = {
    "plain": lambda acc, t, s: acc,
    "bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "fullbias_silu": lambda acc, t, s: F.silu(acc + t["bias"]),
    "alpha_beta": lambda acc, t, s: s["alpha"] * acc + s["beta"] * t["C"],
    "sigmoid": lambda acc, t, s: torch.sigmoid(acc),
    "tanh": lambda acc, t, s: torch.tanh(acc),
    "leaky": lambda acc, t, s: leaky(acc, s["slope"]),
    "expr": expr,
    "bt": lambda acc, t, s: acc + t["bias"],
    "batched": lambda acc, t, s: relu(acc + t["bias"]),
    "f32out": lambda acc, t, s: acc + t["bias"],
    "batched_bcast": lambda acc, t, s: acc + t["C"],
    "128x256": lambda acc, t, s: relu(acc + t["bias"]),
}

_kernels = None


def kernels():
    """{name: (params, transpose A, transpose B)} read from the sketch files."""
    global _kernels
    if _kernels is None:
        _kernels = {}
        for path in SKETCHES:
            with open(path) as f:
                text = f.read()
            for name, plist in sketch_gpu.sketch_params(path).items():
                body = text[text.index(f"kernel {name}("):]
                m = re.search(r"Compute GEMM (\w+)(\^T)?, (\w+)(\^T)?", body)
                _kernels[name] = (plist, bool(m.group(2)), bool(m.group(4)))
    return _kernels


def epilogue_of(name):
    suffix = name.split("_", 2)[2]
    return EPILOGUES.get(suffix, EPILOGUES["plain"])


def make_inputs(name, sizes, misalign=False):
    """Random tensors for every parameter (NaN for the output), scalars, sizes."""
    plist, _, _ = kernels()[name]
    k = sizes.get("K", 1)
    values, tensors = {}, {}
    for pname, dtype, dims in plist:
        if dtype in ("f32", "i32") and not dims:
            values[pname] = SCALARS[pname]
            continue
        shape = [sizes[d] if not d.isdigit() else int(d) for d in dims]
        t = sketch_gpu.DTYPES[dtype]
        count = math.prod(shape)
        storage = torch.empty(count + 8, device="cuda", dtype=t)
        x = storage[1:count + 1] if misalign else storage[:count]
        x = x.view(shape)
        if pname == "D":
            x.fill_(float("nan"))
        else:
            x.copy_(torch.randn(shape, device="cuda") / (math.sqrt(max(k, 1)) if pname == "B" else 1))
        values[pname] = x
        tensors[pname] = x
    for symbol, size in sizes.items():
        values[symbol] = size
    return values, tensors


def reference(name, tensors, scalars):
    _, ta, tb = kernels()[name]
    t = {n: x.double() for n, x in tensors.items() if n != "D"}
    a = t["A"].transpose(-1, -2) if ta else t["A"]
    b = t["B"].transpose(-1, -2) if tb else t["B"]
    return epilogue_of(name)(torch.matmul(a, b), t, scalars)


def out_dtype(name):
    return next(d for p, d, _ in kernels()[name][0] if p == "D")


def check(name, m, n, k, misalign=False, **batch):
    sizes = {"M": m, "N": n, "K": k, **batch}
    values, tensors = make_inputs(name, sizes, misalign)
    used = {p for _, p in sketch_gpu.kernel(name).params}
    status = sketch_gpu.kernel(name)(**{p: v for p, v in values.items() if p in used})
    torch.cuda.synchronize()
    what = f"{name} {m}x{n}x{k} {batch or ''}{' misaligned' if misalign else ''}"
    assert status == 0, f"{what}: returned cudaError {status}"
    ref = reference(name, tensors, SCALARS)
    tol = TOLERANCE[out_dtype(name)]
    return sketch_gpu.check_close(tensors["D"], ref, tol, tol, what)


def batch_sizes(name):
    dims = {d for _, _, ds in kernels()[name][0] for d in ds}
    return {s: v for s, v in (("Bt", 3), ("H", 2)) if s in dims}


def sweep(names, shapes):
    failures = []
    for name in names:
        for m, n, k in shapes:
            try:
                check(name, m, n, k, **batch_sizes(name))
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "; ".join(failures[:4]) + (f" (+{len(failures) - 4} more)"
                                                     if len(failures) > 4 else "")


BIG = ["tc_f16_plain", "tc_bf16_plain", "tc_f16_bias_relu", "tc_bf16_128x256", "tc_f16_256x128",
       "tc_f16_bt", "tc_f16_stages4", "tc_f16_alpha_beta"]


def test_every_kernel_small_sizes():
    """1x1x1; odd sizes (the element path); aligned sizes with partial tiles (the 16-byte path)."""
    sweep(sorted(kernels()), [(1, 1, 1), (127, 257, 65), (64, 72, 40), (130, 136, 200)])


def test_every_kernel_multi_tile():
    """Several tiles in both directions and many k-tiles (every pipeline stage reused)."""
    sweep(sorted(kernels()), [(300, 520, 520), (513, 263, 1031)])


def test_k_zero_and_one():
    """K = 0 (the epilogue of zero) and K = 1 (one partial k-tile)."""
    sweep(["tc_f16_bias_relu", "tc_bf16_alpha_beta", "tc_f16_bt", "tc_f16_at"],
          [(33, 40, 0), (33, 40, 1)])


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the host function picks the element path."""
    for name in ["tc_f16_bias_relu", "tc_bf16_bt", "tc_f16_f32out", "tc_f16_batched"]:
        check(name, 136, 264, 72, misalign=True, **batch_sizes(name))


def test_large_4000x3000x2000():
    sweep(BIG, [(4000, 3000, 2000)])


def test_large_4096():
    sweep(BIG[:4], [(4096, 4096, 4096)])


def test_rejects_bad_arguments():
    """Null pointers and negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
    name = "tc_f16_bias_relu"
    call = sketch_gpu.kernel(name)
    values, tensors = make_inputs(name, {"M": 64, "N": 64, "K": 64})
    bad = dict(values, bias=None)
    assert call(**bad) == sketch_gpu.CUDA_ERROR_INVALID_VALUE, "null bias accepted"
    assert call(**dict(values, K=-1)) == sketch_gpu.CUDA_ERROR_INVALID_VALUE, "K = -1 accepted"
    assert call(**dict(values, M=0)) == 0, "M = 0 is not a no-op"
    torch.cuda.synchronize()
    assert torch.isnan(tensors["D"].float()).all(), "a rejected call wrote its output"
