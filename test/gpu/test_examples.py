"""GPU tests of the GEMM examples (examples/*.sketch, examples/app/mlp_layer.sketch).

Each example kernel runs on fresh random inputs with its output poisoned (NaN),
and every element is compared with an f64 reference of the example's formula:
|out - ref| <= rtol * |ref| + rtol * rms(ref), rtol = 1e-2 for f16/bf16 outputs
and 1e-4 for f32 (the f32 example runs on the f64 tensor cores on sm_90, the CUDA
cores on sm_80; no TF32).
"""
import math

import torch
import torch.nn.functional as F

import sketch_gpu

ALPHA, BETA = 0.5, -0.75
# name: (output, reference on f64 tensors t)
EXAMPLES = {
    "gemm": ("C", lambda t: t["A"] @ t["B"]),
    "gemm_bias_relu": ("D", lambda t: torch.relu(t["A"] @ t["B"] + t["bias"])),
    "gemm_bt": ("C", lambda t: t["A"] @ t["B"].T),
    "gemm_bf16_gelu": ("D", lambda t: F.gelu(t["A"] @ t["B"] + t["bias"])),
    "gemm_epilogue": ("D", lambda t: F.silu(ALPHA * (t["A"] @ t["B"]) + BETA * t["C"] + t["bias"])),
    "batched_gemm": ("C", lambda t: t["A"] @ t["B"]),
    "sgemm": ("C", lambda t: t["A"] @ t["B"]),
    "mlp_layer": ("Y", lambda t: torch.relu(t["X"] @ t["W"] + t["b"])),
}
TYPES = {"const __half *": torch.float16, "__half *": torch.float16,
         "const __nv_bfloat16 *": torch.bfloat16, "__nv_bfloat16 *": torch.bfloat16,
         "const float *": torch.float32, "float *": torch.float32}


def shape_of(name, pname, sizes):
    """The dims of a parameter, from the example's own declaration."""
    import glob
    import os
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
    for path in glob.glob(os.path.join(root, "**", "*.sketch"), recursive=True):
        kernels = sketch_gpu.sketch_params(path)
        if name in kernels:
            dims = next(d for p, _, d in kernels[name] if p == pname)
            return [sizes[d] for d in dims]
    raise LookupError(f"example kernel {name} not found")


def check(name, m, n, k, bt=3):
    output, formula = EXAMPLES[name]
    call = sketch_gpu.kernel(name)
    sizes = {"M": m, "N": n, "K": k, "Bt": bt}
    values, tensors = {}, {}
    for ctype, pname in call.params:
        if ctype in TYPES:
            shape = shape_of(name, pname, sizes)
            x = torch.randn(shape, device="cuda")
            if pname in ("B", "W"):
                x /= math.sqrt(k)
            x = x.to(TYPES[ctype])
            if pname == output:
                x.fill_(float("nan"))
            values[pname] = tensors[pname] = x
        elif ctype == "float":
            values[pname] = {"alpha": ALPHA, "beta": BETA}[pname]
        elif ctype == "int64_t":
            values[pname] = sizes[pname]
    status = call(**values)
    torch.cuda.synchronize()
    what = f"{name} {m}x{n}x{k}"
    assert status == 0, f"{what}: returned cudaError {status}"
    ref = formula({p: x.double() for p, x in tensors.items() if p != output})
    out = tensors[output]
    tol = 1e-4 if out.dtype == torch.float32 else 1e-2
    sketch_gpu.check_close(out, ref, tol, tol, what)


def test_gemm_examples():
    failures = []
    for name in EXAMPLES:
        for m, n, k in [(1, 1, 1), (127, 257, 65), (256, 384, 320), (1000, 1000, 1000)]:
            try:
                check(name, m, n, k)
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "; ".join(failures[:4])
