"""GPU tests of the back-to-back GEMM backend against a torch reference.

The kernels come from test/gpu/b2b/b2b_variants.sketch, compiled into one shared
library (SKETCH_B2B_LIB, else SKETCH_GPU_LIB, or --lib when run alone). Every
case draws fresh random inputs, poisons D1 with NaN, and checks every element
against the reference: both GEMMs in f32 on the same inputs, D0 rounded to the
operand type of GEMM-II after its epilogue (as the kernel does), the epilogues
applied in f32. M is never a multiple of the block tile in the main sweep, and
K0 takes values that are not multiples of BK.

Runs alone (`python3 test_b2b.py --lib b2b_variants.so`) or under the GPU
harness (run_tests.py), which calls the `test_*` functions.
"""
import ctypes
import os
import sys

import torch
import torch.nn.functional as F

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
# Every element: |out - ref| <= RTOL * |ref| + ATOL * rms(ref).
TOLERANCE = {"f16": (1e-2, 1e-2), "bf16": (3e-2, 3e-2), "f32": (1e-2, 1e-2)}
M_VALUES = [1, 100, 1000, 4133]
K0_VALUES = [8, 72, 200, 576]

_lib = None


def library():
    global _lib
    if _lib is None:
        path = os.environ.get("SKETCH_B2B_LIB") or os.environ.get("SKETCH_GPU_LIB")
        if not path:
            raise RuntimeError("set SKETCH_B2B_LIB to the compiled b2b_variants library")
        _lib = ctypes.CDLL(path)
    return _lib


def relu(x):
    return torch.clamp_min(x, 0.0)


def leaky_relu(x, s):
    return torch.where(x >= 0, x, s * x)


# Each kernel: its tensors (name, dtype, shape with "M"/"K0"), its scalars, the
# epilogue between the GEMMs on D0 and the one after on D1 (f32 tensors in, f32 out).
KERNELS = {
    "b2b_n32": dict(
        n0=32, n1=64, operand="f16", out="f16", extra=[("C1", "f16", ["M", 64])],
        scalars=["alpha0", "alpha1", "beta1"],
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: relu(s["alpha1"] * d1 + s["beta1"] * t["C1"])),
    "b2b_n64": dict(
        n0=64, n1=128, operand="f16", out="f16", extra=[("C1", "f16", ["M", 128])],
        scalars=["alpha0", "alpha1", "beta1"],
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: relu(s["alpha1"] * d1 + s["beta1"] * t["C1"])),
    "b2b_n128": dict(
        n0=128, n1=128, operand="f16", out="f16",
        extra=[("bias0", "f16", [128]), ("C1", "f16", ["M", 128]), ("rowv", "f32", ["M"])],
        scalars=["alpha1", "beta1"],
        epi0=lambda d0, t, s: F.gelu(d0 + t["bias0"]),
        epi1=lambda d1, t, s: F.silu(d1 * s["alpha1"] + s["beta1"] * t["C1"] + t["rowv"][:, None])),
    "b2b_n256": dict(
        n0=256, n1=64, operand="f16", out="f16", extra=[("bias1", "f32", [64])],
        scalars=["alpha0"],
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: d1 + t["bias1"]),
    "b2b_n256_wide": dict(
        n0=256, n1=256, operand="f16", out="f16", extra=[("C1", "f16", ["M", 256])],
        scalars=["alpha0", "alpha1", "beta1"],
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: relu(s["alpha1"] * d1 + s["beta1"] * t["C1"])),
    "b2b_staged": dict(
        n0=512, n1=64, operand="f16", out="f16", extra=[("C1", "f16", ["M", 64])],
        scalars=["alpha0", "alpha1", "beta1"],
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: relu(s["alpha1"] * d1 + s["beta1"] * t["C1"])),
    "b2b_staged_bn": dict(
        n0=128, n1=64, operand="f16", out="f16", extra=[], scalars=[],
        epi0=lambda d0, t, s: torch.tanh(d0),
        epi1=lambda d1, t, s: d1),
    "b2b_bf16": dict(
        n0=64, n1=64, operand="bf16", out="f32", extra=[("C1", "bf16", ["M", 64])], scalars=[],
        epi0=lambda d0, t, s: leaky_relu(d0, 0.1) * 2,
        epi1=lambda d1, t, s: torch.tanh(d1) + t["C1"] - torch.sigmoid(0.5 * d1)),
    "b2b_plain": dict(
        n0=128, n1=128, operand="f16", out="f16", extra=[], scalars=[],
        epi0=lambda d0, t, s: d0,
        epi1=lambda d1, t, s: d1),
    "b2b_stages1": dict(
        n0=64, n1=32, operand="f16", out="bf16", extra=[("rowb", "f16", ["M"])], scalars=[],
        epi0=lambda d0, t, s: d0 - t["rowb"][:, None],
        epi1=lambda d1, t, s: relu(d1)),
    # K-contiguous B operands (stored [N, K]): the names in `kmajor`.
    "b2b_kmajor": dict(
        n0=64, n1=128, operand="f16", out="f16", extra=[("C1", "f16", ["M", 128])],
        scalars=["alpha0", "alpha1", "beta1"], kmajor=("B0", "B1"),
        epi0=lambda d0, t, s: relu(s["alpha0"] * d0),
        epi1=lambda d1, t, s: relu(s["alpha1"] * d1 + s["beta1"] * t["C1"])),
    "b2b_kmajor_staged": dict(
        n0=512, n1=64, operand="bf16", out="bf16", extra=[], scalars=[], kmajor=("B0", "B1"),
        epi0=lambda d0, t, s: torch.tanh(d0),
        epi1=lambda d1, t, s: d1),
    "b2b_kmajor_b1": dict(
        n0=128, n1=32, operand="f16", out="f16", extra=[], scalars=[], kmajor=("B1",),
        epi0=lambda d0, t, s: d0,
        epi1=lambda d1, t, s: d1),
    # A Softmax of D0 between the GEMMs (rows of D0 whole in each warp).
    "b2b_softmax": dict(
        n0=64, n1=128, operand="f16", out="f16", extra=[("C1", "f16", ["M", 128])],
        scalars=["alpha0"],
        epi0=lambda d0, t, s: torch.softmax(d0 * s["alpha0"], dim=1) * 64,
        epi1=lambda d1, t, s: d1 + t["C1"]),
    "b2b_softmax_staged": dict(
        n0=128, n1=256, operand="bf16", out="bf16", extra=[], scalars=[],
        epi0=lambda d0, t, s: torch.softmax(F.gelu(d0), dim=1),
        epi1=lambda d1, t, s: d1),
}

# The parameter order of each kernel (as declared in b2b_variants.sketch).
ORDER = {
    "b2b_n32": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_n64": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_n128": ["A0", "B0", "bias0", "B1", "C1", "rowv", "D1"],
    "b2b_n256": ["A0", "B0", "B1", "bias1", "D1"],
    "b2b_n256_wide": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_staged": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_staged_bn": ["A0", "B0", "B1", "D1"],
    "b2b_bf16": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_plain": ["A0", "B0", "B1", "D1"],
    "b2b_stages1": ["A0", "B0", "rowb", "B1", "D1"],
    "b2b_kmajor": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_kmajor_staged": ["A0", "B0", "B1", "D1"],
    "b2b_kmajor_b1": ["A0", "B0", "B1", "D1"],
    "b2b_softmax": ["A0", "B0", "B1", "C1", "D1"],
    "b2b_softmax_staged": ["A0", "B0", "B1", "D1"],
}


def make_inputs(name, m, k0, seed):
    """Random tensors (scaled so that D0 and D1 stay O(1)) and scalars for one case."""
    spec = KERNELS[name]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    op = DTYPES[spec["operand"]]
    n0, n1 = spec["n0"], spec["n1"]

    def rand(shape, dtype, scale=1.0):
        return (torch.randn(shape, generator=gen, device="cuda") * scale).to(dtype)

    kmajor = spec.get("kmajor", ())

    def operand_b(bname, k, n, scale):  # [K, N], or [N, K] when K-contiguous
        return rand((n, k) if bname in kmajor else (k, n), op, scale)

    t = {
        "A0": rand((m, k0), op),
        "B0": operand_b("B0", k0, n0, 1.0 / max(k0, 1) ** 0.5),
        "B1": operand_b("B1", n0, n1, 1.0 / n0 ** 0.5),
    }
    for tname, dtype, shape in spec["extra"]:
        dims = [m if d == "M" else d for d in shape]
        t[tname] = rand(dims, DTYPES[dtype])
    t["D1"] = torch.full((m, n1), float("nan"), device="cuda", dtype=DTYPES[spec["out"]])
    s = {sname: 0.5 + torch.rand(1, generator=gen, device="cuda").item() for sname in spec["scalars"]}
    return t, s


def reference(name, t, s):
    spec = KERNELS[name]
    f = {k: v.float() for k, v in t.items()}
    for bname in spec.get("kmajor", ()):
        f[bname] = f[bname].t()
    d0 = spec["epi0"](f["A0"] @ f["B0"], f, s)
    d0 = d0.to(DTYPES[spec["operand"]]).float()  # GEMM-II's A operand
    return spec["epi1"](d0 @ f["B1"], f, s)


def launch(name, t, s, m, k0):
    """Calls the generated host function; returns its cudaError_t."""
    fn = getattr(library(), name)
    fn.restype = ctypes.c_int
    args = [ctypes.c_void_p(t[p].data_ptr()) for p in ORDER[name]]
    args += [ctypes.c_float(s[p]) for p in KERNELS[name]["scalars"]]
    args += [ctypes.c_int64(m), ctypes.c_int64(k0)]
    args.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    return fn(*args)


def check_one(name, m, k0, seed=0, prepare=None):
    """Runs one case (its inputs passed through `prepare` first); returns an error message or None."""
    t, s = make_inputs(name, m, k0, seed)
    if prepare:
        t = prepare(t)
    status = launch(name, t, s, m, k0)
    torch.cuda.synchronize()
    where = f"{name} M={m} K0={k0}"
    if status != 0:
        return f"{where}: returned cudaError {status}"
    out = t["D1"].float()
    if not torch.isfinite(out).all():
        bad = (~torch.isfinite(out)).sum().item()
        return f"{where}: {bad} of {out.numel()} elements not finite (unwritten or NaN)"
    ref = reference(name, t, s)
    types = (KERNELS[name]["operand"], KERNELS[name]["out"])
    rtol, atol = TOLERANCE["bf16" if "bf16" in types else "f16"]
    scale = ref.pow(2).mean().sqrt().item() if ref.numel() else 0.0
    err = (out - ref).abs()
    limit = rtol * ref.abs() + atol * scale
    worst = (err - limit).max().item() if err.numel() else -1.0
    if worst > 0:
        i = int((err - limit).argmax())
        r, c = divmod(i, out.shape[1])
        return (f"{where}: element ({r}, {c}) is {out[r, c].item():.5g}, reference "
                f"{ref[r, c].item():.5g}; {(err > limit).sum().item()} elements off")
    return None


def run_cases(cases):
    failures = [msg for msg in (check_one(*c) for c in cases) if msg]
    for msg in failures:
        print("FAIL", msg)
    return failures


def sweep(name, m_values=M_VALUES, k0_values=K0_VALUES):
    return [(name, m, k0, i) for i, (m, k0) in
            enumerate((m, k0) for m in m_values for k0 in k0_values)]


def test_n32():
    assert not run_cases(sweep("b2b_n32"))


def test_n64_reference_program():
    assert not run_cases(sweep("b2b_n64"))


def test_n128_bias_gelu_silu():
    assert not run_cases(sweep("b2b_n128"))


def test_n256_registers():
    assert not run_cases(sweep("b2b_n256"))


def test_n256_wide():
    assert not run_cases(sweep("b2b_n256_wide", k0_values=[72, 256]))


def test_staged_in_shared_memory():
    assert not run_cases(sweep("b2b_staged", k0_values=[72, 256]))


def test_staged_chunks_eight_warps_two_stages():
    assert not run_cases(sweep("b2b_staged_bn"))


def test_bf16_f32_output():
    assert not run_cases(sweep("b2b_bf16"))


def test_plain_bk64():
    assert not run_cases(sweep("b2b_plain"))


def test_one_stage_row_bias():
    assert not run_cases(sweep("b2b_stages1"))


def test_kmajor_registers():
    assert not run_cases(sweep("b2b_kmajor"))


def test_kmajor_staged_bf16():
    assert not run_cases(sweep("b2b_kmajor_staged"))


def test_kmajor_b1_chunks_one_stage():
    assert not run_cases(sweep("b2b_kmajor_b1"))


def test_softmax_between():
    """The row softmax of D0 in registers (the wgmma form where TMA applies on sm_90a)."""
    assert not run_cases(sweep("b2b_softmax"))


def test_softmax_staged_bf16():
    """The row softmax of D0 in GEMM-I's one pass before D0 is staged (bf16, N1 = 256)."""
    assert not run_cases(sweep("b2b_softmax_staged", k0_values=[8, 200]))


def test_kmajor_offset_operands():
    """K-contiguous B0 and B1 16 bytes past their allocations (the rows of B0 are K0 apart)."""
    def shift(t):
        return {k: offset_copy(v, 8) if k in ("A0", "B0", "B1") else v for k, v in t.items()}
    failures = [check_one("b2b_kmajor", m, k0, 22, shift) for m, k0 in ((1000, 200), (4133, 72))]
    for msg in filter(None, failures):
        print("FAIL", msg)
    assert not any(failures)


def test_kmajor_rejects_bad_sizes():
    """K0 not a multiple of 8 (the rows of the K-contiguous B0 too) is cudaErrorInvalidValue."""
    t, s = make_inputs("b2b_kmajor", 64, 12, 5)
    assert launch("b2b_kmajor", t, s, 64, 12) == 1
    torch.cuda.synchronize()
    assert torch.isnan(t["D1"].float()).all()


def test_large_m():
    """The benchmark's first shape, with M one row past a multiple of 128."""
    assert not run_cases([("b2b_n64", 81921, 576, 7)])


def offset_copy(x, elems):
    """x copied to a buffer `elems` elements past the start of its allocation."""
    buf = torch.empty(x.numel() + elems, dtype=x.dtype, device=x.device)
    view = buf[elems:].view(x.shape)
    view.copy_(x)
    return view


def test_offset_operands():
    """A0, B0 and C1 16 bytes past their allocations: the TMA path (b2b_n64, b2b_n128 with two
    B0 panels) needs 16-byte aligned tensors only, whatever the 1024-byte swizzle of its stages."""
    def shift(t):
        return {k: offset_copy(v, 8) if k in ("A0", "B0", "C1") else v for k, v in t.items()}
    failures = [check_one(name, m, k0, 21, shift) for name in ("b2b_n64", "b2b_n128")
                for m, k0 in ((1000, 200), (4133, 576))]
    for msg in filter(None, failures):
        print("FAIL", msg)
    assert not any(failures)


def test_rejects_bad_sizes():
    """K0 not a multiple of 8 is cudaErrorInvalidValue (1) and writes nothing; M = 0 is a no-op."""
    t, s = make_inputs("b2b_n64", 64, 12, 3)
    assert launch("b2b_n64", t, s, 64, 12) == 1
    t2, s2 = make_inputs("b2b_n64", 0, 64, 4)
    assert launch("b2b_n64", t2, s2, 0, 64) == 0
    torch.cuda.synchronize()
    assert torch.isnan(t["D1"].float()).all()


# Batched kernels: (operand, output type, N0, N1, batch dims) and, per tensor, its
# leading dims ("all": the output's, "inner": the last of them, none: shared).
BATCHED = {
    "b2b_batched": dict(operand="f16", out="f16", n0=64, n1=128, batch=("Bt",),
                        order=["A0", "B0", "B1", "bias1", "C1", "D1"]),
    "b2b_batched_staged": dict(operand="bf16", out="f32", n0=512, n1=64, batch=("H", "Bt"),
                               order=["A0", "B0", "B1", "rowb", "D1"]),
    "b2b_batched_fold": dict(operand="f16", out="f16", n0=128, n1=64, batch=("H", "Bt"),
                             order=["A0", "B0", "bias0", "B1", "C1", "D1"]),
}


def batched_case(name, batch, m, k0, seed):
    """Runs one batched case; returns an error message or None."""
    spec = BATCHED[name]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    op, n0, n1 = DTYPES[spec["operand"]], spec["n0"], spec["n1"]

    def rand(shape, dtype, scale=1.0):
        return (torch.randn(shape, generator=gen, device="cuda") * scale).to(dtype)

    b = tuple(batch)
    t = {"A0": rand(b + (m, k0), op)}
    if name == "b2b_batched":
        t["B0"] = rand(b + (k0, n0), op, 1.0 / max(k0, 1) ** 0.5)
        t["B1"] = rand((n0, n1), op, 1.0 / n0 ** 0.5)
        t["bias1"] = rand((n1,), op)
        t["C1"] = rand(b + (m, n1), op)
    elif name == "b2b_batched_fold":
        t["B0"] = rand((k0, n0), op, 1.0 / max(k0, 1) ** 0.5)
        t["bias0"] = rand((n0,), op)
        t["B1"] = rand((n0, n1), op, 1.0 / n0 ** 0.5)
        t["C1"] = rand(b + (m, n1), op)
    else:
        t["B0"] = rand((k0, n0), op, 1.0 / max(k0, 1) ** 0.5)
        t["B1"] = rand(b[-1:] + (n1, n0), op, 1.0 / n0 ** 0.5)  # K-contiguous, per inner index
        t["rowb"] = rand((m,), torch.float32)
    t["D1"] = torch.full(b + (m, n1), float("nan"), device="cuda", dtype=DTYPES[spec["out"]])
    fn = getattr(library(), name)
    fn.restype = ctypes.c_int
    args = [ctypes.c_void_p(t[p].data_ptr()) for p in spec["order"]]
    args += [ctypes.c_int64(v) for v in list(batch) + [m, k0]]
    args.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    status = fn(*args)
    torch.cuda.synchronize()
    where = f"{name} batch={batch} M={m} K0={k0}"
    if status != 0:
        return f"{where}: returned cudaError {status}"
    f = {k: v.float() for k, v in t.items()}
    if name == "b2b_batched":
        d0 = relu(f["A0"] @ f["B0"]).to(op).float()
        ref = d0 @ f["B1"] + f["bias1"] + f["C1"]
    elif name == "b2b_batched_fold":
        d0 = F.gelu(f["A0"] @ f["B0"] + f["bias0"]).to(op).float()
        ref = d0 @ f["B1"] + f["C1"]
    else:
        d0 = torch.tanh(f["A0"] @ f["B0"]).to(op).float()
        ref = d0 @ f["B1"].transpose(-1, -2) - f["rowb"][:, None]
    out = f["D1"]
    if not torch.isfinite(out).all():
        return f"{where}: {(~torch.isfinite(out)).sum().item()} elements not finite (unwritten or NaN)"
    rtol, atol = TOLERANCE["bf16" if spec["operand"] == "bf16" else "f16"]
    scale = ref.pow(2).mean().sqrt().item() if ref.numel() else 0.0
    off = ((out - ref).abs() > rtol * ref.abs() + atol * scale).sum().item()
    return f"{where}: {off} elements off" if off else None


def test_batched():
    """Batched b2b: one and two batch dims, operands per batch index, per inner index or
    shared (b2b_batched_fold: B0 and B1 shared, the batch folded into M); M not a multiple
    of the tile, batches of 1 to 300, every element checked."""
    cases = [("b2b_batched", (1,), 100, 72), ("b2b_batched", (3,), 1000, 200),
             ("b2b_batched", (7,), 4133, 576), ("b2b_batched", (5,), 1, 8),
             ("b2b_batched", (300,), 33, 24),  # more batch indices than SMs: a block each
             ("b2b_batched_staged", (2, 3), 100, 72), ("b2b_batched_staged", (1, 2), 1000, 256),
             ("b2b_batched_staged", (3, 1), 257, 8),
             ("b2b_batched_fold", (2, 3), 100, 72), ("b2b_batched_fold", (1, 1), 4133, 576),
             ("b2b_batched_fold", (3, 5), 1, 8), ("b2b_batched_fold", (4, 2), 1000, 200)]
    failures = [msg for msg in (batched_case(n, b, m, k0, i) for i, (n, b, m, k0) in
                                enumerate(cases)) if msg]
    for msg in failures:
        print("FAIL", msg)
    assert not failures


def test_batched_empty_and_bad_sizes():
    """A batch of 0 is a no-op; K0 not a multiple of 8 is cudaErrorInvalidValue and writes nothing."""
    assert batched_case("b2b_batched", (0,), 100, 72, 30) is None
    t = torch.full((2, 64, 128), float("nan"), device="cuda", dtype=torch.float16)
    c1 = torch.randn((2, 64, 128), device="cuda").half()
    a = torch.randn((2, 64, 12), device="cuda").half()
    b0 = torch.randn((2, 12, 64), device="cuda").half()
    b1, bias = torch.randn((64, 128), device="cuda").half(), torch.randn(128, device="cuda").half()
    fn = library().b2b_batched
    fn.restype = ctypes.c_int
    ptrs = [ctypes.c_void_p(x.data_ptr()) for x in (a, b0, b1, bias, c1, t)]
    status = fn(*ptrs, ctypes.c_int64(2), ctypes.c_int64(64), ctypes.c_int64(12),
                ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    assert status == 1
    assert torch.isnan(t.float()).all()


def main(argv):
    if "--lib" in argv:
        os.environ["SKETCH_B2B_LIB"] = argv[argv.index("--lib") + 1]
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print("PASS", name)
        except AssertionError:
            failed += 1
            print("FAIL", name)
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
