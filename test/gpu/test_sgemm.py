"""GPU tests of the f32 SIMT GEMM kernels of test/gpu/sgemm/*.sketch.

Every case draws fresh random inputs (never zeros), fills the output with NaN,
calls the generated host function on the current stream and compares every
element with an f64 reference computed by torch from the same inputs:
    |out - ref| <= 1e-4 * |ref| + 1e-4 * rms(ref)
(f16 outputs: 1e-2). Sizes: 1x1x1, 127x257x65, odd and partial tiles,
4000x3000x2000 and 4096^3; K = 0 and 1; misaligned base pointers (the scalar
path); bad arguments return cudaErrorInvalidValue without writing.
"""
import glob
import math
import os
import re

import torch
import torch.nn.functional as F

import sketch_gpu

SKETCHES = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sgemm",
                                         "*.sketch")))
SCALARS = {"alpha": 0.75, "beta": -1.25, "slope": 0.1}
TOLERANCE = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-4}


def relu(x):
    return x.clamp(min=0)


def leaky(x, s):
    return torch.where(x >= 0, x, s * x)


def expr(acc, t, s):
    a, b = s["alpha"], s["beta"]
    half = torch.tensor(-0.5, dtype=acc.dtype, device=acc.device)
    first = torch.maximum(relu(a * acc + b * t["C"]) - t["bias"], half)
    return first + torch.minimum(torch.exp(-acc * acc), torch.tanh(acc)) / 2 + leaky(acc, 0.1)


# The epilogue of each kernel (by the name after "sg_f32_"), on the f64 product
# `acc`, the f64 tensors t and the scalars s.
EPILOGUES = {
    "plain": lambda acc, t, s: acc,
    "bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "fullbias_silu": lambda acc, t, s: F.silu(acc + t["bias"]),
    "alpha_beta": lambda acc, t, s: s["alpha"] * acc + s["beta"] * t["C"],
    "sigmoid": lambda acc, t, s: torch.sigmoid(acc),
    "leaky": lambda acc, t, s: leaky(acc, s["slope"]),
    "scale_tanh": lambda acc, t, s: torch.tanh(s["alpha"] * acc),
    "add_beta": lambda acc, t, s: acc + s["beta"] * t["C"],
    "expr": expr,
    "bt": lambda acc, t, s: acc + t["bias"],
    "at": lambda acc, t, s: acc,
    "atbt": lambda acc, t, s: acc,
    "batched": lambda acc, t, s: relu(acc + t["bias"]),
    "batched_bcast": lambda acc, t, s: acc + t["C"],
    "f16out": lambda acc, t, s: acc + t["bias"],
    "t128x128x16": lambda acc, t, s: acc + t["bias"],
    "t64x128x8": lambda acc, t, s: acc + t["bias"],
    "t128x64x8": lambda acc, t, s: acc + t["bias"],
    "t64x64x8_atbt": lambda acc, t, s: acc + t["bias"],
    "t64x64x8": lambda acc, t, s: acc + t["bias"],
    "stages1": lambda acc, t, s: acc + t["bias"],
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
        count = math.prod(shape)
        storage = torch.empty(count + 8, device="cuda", dtype=sketch_gpu.DTYPES[dtype])
        x = (storage[1:count + 1] if misalign else storage[:count]).view(shape)
        if pname == "D":
            x.fill_(float("nan"))
        else:
            x.copy_(torch.randn(shape, device="cuda") / (math.sqrt(max(k, 1)) if pname == "B" else 1))
        values[pname] = x
        tensors[pname] = x
    values.update(sizes)
    return values, tensors


def reference(name, tensors):
    _, ta, tb = kernels()[name]
    t = {n: x.double() for n, x in tensors.items() if n != "D"}
    a = t["A"].transpose(-1, -2) if ta else t["A"]
    b = t["B"].transpose(-1, -2) if tb else t["B"]
    return EPILOGUES[name[len("sg_f32_"):]](torch.matmul(a, b), t, SCALARS)


def out_dtype(name):
    return next(d for p, d, _ in kernels()[name][0] if p == "D")


def batch_sizes(name):
    dims = {d for _, _, ds in kernels()[name][0] for d in ds}
    return {s: v for s, v in (("Bt", 3), ("H", 2)) if s in dims}


def check(name, m, n, k, misalign=False):
    sizes = {"M": m, "N": n, "K": k, **batch_sizes(name)}
    values, tensors = make_inputs(name, sizes, misalign)
    call = sketch_gpu.kernel(name)
    used = {p for _, p in call.params}
    status = call(**{p: v for p, v in values.items() if p in used})
    torch.cuda.synchronize()
    what = f"{name} {m}x{n}x{k}{' misaligned' if misalign else ''}"
    assert status == 0, f"{what}: returned cudaError {status}"
    tol = TOLERANCE[out_dtype(name)]
    return sketch_gpu.check_close(tensors["D"], reference(name, tensors), tol, tol, what)


def sweep(names, shapes, misalign=False):
    failures = []
    for name in names:
        for m, n, k in shapes:
            try:
                check(name, m, n, k, misalign)
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "; ".join(failures[:4]) + (f" (+{len(failures) - 4} more)"
                                                     if len(failures) > 4 else "")


def test_every_kernel_small_sizes():
    """1x1x1; odd sizes (the scalar path); multiples of 4 with partial tiles (the 16-byte path)."""
    sweep(sorted(kernels()), [(1, 1, 1), (127, 257, 65), (33, 5, 7), (64, 72, 40), (130, 136, 200)])


def test_every_kernel_multi_tile():
    """Several tiles in both directions and many k-tiles."""
    sweep(sorted(kernels()), [(300, 520, 520), (513, 263, 1031)])


def test_k_zero_and_one():
    """K = 0 (the epilogue of zero) and K = 1 (one partial k-tile)."""
    sweep(["sg_f32_bias_relu", "sg_f32_alpha_beta", "sg_f32_bt", "sg_f32_at", "sg_f32_stages1"],
          [(33, 40, 0), (33, 40, 1)])


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the host function picks the scalar path."""
    sweep(["sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at", "sg_f32_batched", "sg_f32_f16out",
           "sg_f32_t128x128x16"], [(136, 264, 72)], misalign=True)


def test_large_4000x3000x2000():
    sweep(["sg_f32_plain", "sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at", "sg_f32_t128x128x16",
           "sg_f32_t64x128x8", "sg_f32_expr"], [(4000, 3000, 2000)])


def test_large_4096():
    sweep(["sg_f32_plain", "sg_f32_t128x128x16", "sg_f32_atbt"], [(4096, 4096, 4096)])


def test_rejects_bad_arguments():
    """Null pointers and negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
    name = "sg_f32_bias_relu"
    call = sketch_gpu.kernel(name)
    values, tensors = make_inputs(name, {"M": 64, "N": 64, "K": 64})
    assert call(**dict(values, bias=None)) == sketch_gpu.CUDA_ERROR_INVALID_VALUE, "null bias"
    assert call(**dict(values, K=-1)) == sketch_gpu.CUDA_ERROR_INVALID_VALUE, "K = -1 accepted"
    assert call(**dict(values, M=0)) == 0, "M = 0 is not a no-op"
    torch.cuda.synchronize()
    assert torch.isnan(tensors["D"]).all(), "a rejected call wrote its output"
