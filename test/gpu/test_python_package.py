"""The sketch Python package (python/sketch) on the GPU, with a real sketchc.

sketch.compile runs sketchc (the static build carried to the GPU machine:
$SKETCHC, or on PATH) and nvcc; these tests call the kernels on torch tensors
and check every element against an f64 reference, the argument checks (in a
subprocess, so that a crash fails the test instead of ending the suite), the
cache, the current stream, torch.compile without graph breaks, and the README's
Python quick start.
"""
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import sketch  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
CACHE = os.environ.get("SKETCH_CACHE_DIR") or tempfile.mkdtemp(prefix="sketch-cache-")
os.environ["SKETCH_CACHE_DIR"] = CACHE


def compile_example(name, **options):
    return sketch.compile(os.path.join(EXAMPLES, name), **options)


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), "non-finite elements (unwritten or overflow)"
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def gemm_bias_relu_reference(a, b, bias):
    return torch.relu(a.double() @ b.double() + bias.double())


def test_sketchc_is_the_static_build():
    """The package must run sketchc where no LLVM/MLIR is installed (the GPU machine)."""
    path = sketch.find_sketchc()
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    assert "libLLVM" not in out and "libMLIR" not in out, f"{path} links LLVM dynamically:\n{out}"
    version = subprocess.run([path, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and "sketchc" in version.stdout, version


def test_gemm_values_and_allocated_output():
    lib = compile_example("gemm_bias_relu.sketch")
    for m, n, k in [(1, 8, 8), (127, 257, 65), (1000, 1000, 1000), (4000, 3000, 2000)]:
        a = torch.randn(m, k, device="cuda").half()
        b = (torch.randn(k, n, device="cuda") / k ** 0.5).half()
        bias = torch.randn(n, device="cuda").half()
        d = lib.gemm_bias_relu(a, b, bias)                    # D left out: allocated
        assert d.shape == (m, n) and d.dtype == torch.float16
        error = relative_error(d, gemm_bias_relu_reference(a, b, bias))
        assert error < 1e-2, f"{m}x{n}x{k}: relative error {error:.2e}"
        poisoned = torch.full((m, n), float("nan"), device="cuda", dtype=torch.half)
        out = lib.gemm_bias_relu(B=b, A=a, bias=bias, D=poisoned)  # by name, D given
        assert out is poisoned
        error = relative_error(poisoned, gemm_bias_relu_reference(a, b, bias))
        assert error < 1e-2, f"{m}x{n}x{k} (D given): relative error {error:.2e}"
    # Views one element past a 16-byte boundary: the GEMM takes element-aligned pointers.
    m, n, k = 77, 131, 93
    a = torch.randn(m * k + 1, device="cuda").half()[1:].view(m, k)
    b = (torch.randn(k * n + 1, device="cuda") / 10).half()[1:].view(k, n)
    bias = torch.randn(n + 1, device="cuda").half()[1:]
    out = torch.full((m * n + 1,), float("nan"), device="cuda").half()[1:].view(m, n)
    lib.gemm_bias_relu(a, b, bias, out)
    error = relative_error(out, gemm_bias_relu_reference(a, b, bias))
    assert error < 1e-2, f"misaligned views: relative error {error:.2e}"


def test_scalars_and_epilogue_operands():
    lib = compile_example("gemm_epilogue.sketch")
    m, n, k = 333, 517, 129
    a, b = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
    c, bias = torch.randn(m, n, device="cuda").half(), torch.randn(n, device="cuda").half()
    d = lib.gemm_epilogue(a, b, c, bias, alpha=0.5, beta=-2.0)
    acc = 0.5 * (a.double() @ b.double()) - 2.0 * c.double() + bias.double()
    error = relative_error(d, torch.nn.functional.silu(acc))
    assert error < 1e-2, f"relative error {error:.2e}"


def test_attention_gqa():
    lib = compile_example("attention_gqa.sketch")
    b, h, hk, s, l, d = 2, 8, 2, 203, 317, 128
    q = torch.randn(b, h, s, d, device="cuda").half()
    k = torch.randn(b, hk, l, d, device="cuda").half()
    v = torch.randn(b, hk, l, d, device="cuda").half()
    o = lib.attention_gqa(q, k, v, scale=d ** -0.5)
    kr, vr = k.float().repeat_interleave(h // hk, 1), v.float().repeat_interleave(h // hk, 1)
    ref = torch.softmax(q.float() @ kr.transpose(-1, -2) * d ** -0.5, dim=-1) @ vr
    error = relative_error(o, ref)
    assert error < 1e-2, f"relative error {error:.2e}"


def test_conv_derived_output_size():
    lib = compile_example("conv2d_nhwc.sketch")
    kernel = next(iter(lib.kernels.values()))
    x_param, w_param = kernel.sig.tensors[0], kernel.sig.tensors[1]
    assert x_param.layout == "nhwc", x_param.layout
    dtype = sketch._torch_ops.DTYPES[x_param.dtype]
    x = torch.randn(2, 13, 11, 24, device="cuda").to(dtype)
    w = (torch.randn(40, 3, 3, 24, device="cuda") / 15).to(dtype)
    bias = torch.randn(40, device="cuda").to(dtype)
    y = kernel(x, w, bias)  # Out left out: its P, Q are derived from the input's
    stride, pad = _conv_options(os.path.join(EXAMPLES, "conv2d_nhwc.sketch"))
    ref = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2).double(), w.permute(0, 3, 1, 2).double(),
                                     bias.double(), stride=stride, padding=pad)
    ref = torch.relu(ref).permute(0, 2, 3, 1)
    assert y.shape == ref.shape, f"{tuple(y.shape)} != {tuple(ref.shape)}"
    error = relative_error(y, ref)
    assert error < 1e-2, f"relative error {error:.2e}"


def _conv_options(path):
    text = open(path).read()
    stride = tuple(int(v) for v in re.search(r"stride \((\d+), (\d+)\)", text).groups())
    pad = tuple(int(v) for v in re.search(r"pad \((\d+), (\d+)\)", text).groups())
    return stride, pad


def test_source_text_cache_and_defines():
    source = open(os.path.join(EXAMPLES, "b2b.sketch")).read()
    start = time.time()
    first = sketch.compile(source, defines={})
    built = time.time() - start
    start = time.time()
    again = sketch.compile(source)
    cached = time.time() - start
    assert first.folder == again.folder, "the same sketch and options were built twice"
    assert cached < built, f"cache hit took {cached:.2f} s, the build {built:.2f} s"
    other = sketch.compile(source, arch="sm_80")
    assert other.folder != first.folder and other.arch == "sm_80"


def test_current_stream():
    lib = compile_example("gemm_bias_relu.sketch")
    a = torch.randn(2048, 2048, device="cuda").half()
    b = (torch.randn(2048, 2048, device="cuda") / 45).half()
    bias = torch.randn(2048, device="cuda").half()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        d = torch.full((2048, 2048), float("nan"), device="cuda", dtype=torch.half)
        lib.gemm_bias_relu(a, b, bias, D=d)
    stream.synchronize()
    error = relative_error(d, gemm_bias_relu_reference(a, b, bias))
    assert error < 1e-2, f"side stream: relative error {error:.2e}"


def test_repeated_calls_reuse_their_checks():
    """A call like an earlier one runs its CallPlan: new data, pointers, outputs and
    streams each time, the same results as the first call's full checks give."""
    lib = compile_example("gemm_bias_relu.sketch")
    op = lib.gemm_bias_relu
    m, n, k = 257, 131, 72
    first = None
    for round_ in range(3):
        a = torch.randn(m, k, device="cuda").half()
        b = (torch.randn(k, n, device="cuda") / 9).half()
        bias = torch.randn(n, device="cuda").half()
        ref = gemm_bias_relu_reference(a, b, bias)
        allocated = op(a, b, bias)
        poisoned = torch.full((m, n), float("nan"), device="cuda", dtype=torch.half)
        given = op(B=b, A=a, bias=bias, D=poisoned)
        assert given is poisoned and allocated.data_ptr() != poisoned.data_ptr()
        none_given = op(a, b, bias, D=None)  # an output passed as None: allocated
        for out in (allocated, given, none_given):
            error = relative_error(out, ref)
            assert error < 1e-2, f"round {round_}: relative error {error:.2e}"
        if first is None:
            first = dict(op._plans)
    assert len(op._plans) == 3 and op._plans.keys() == first.keys(), op._plans.keys()
    # A view at an odd offset with the same shapes as an aligned call: the GEMM takes it.
    a = torch.randn(m * k + 1, device="cuda").half()[1:].view(m, k)
    error = relative_error(op(a, b, bias), gemm_bias_relu_reference(a, b, bias))
    assert error < 1e-2, f"misaligned view after aligned calls: relative error {error:.2e}"
    # Attention needs 16 bytes: the same shapes one element off raise, the plan or not.
    attn = compile_example("attention_gqa.sketch").attention_gqa
    q = torch.randn(1, 4, 16, 128, device="cuda").half()
    kv = torch.randn(1, 2, 16, 128, device="cuda").half()
    attn(q, kv, kv, scale=0.1)
    attn(q, kv, kv, scale=0.1)
    shifted = torch.randn(q.numel() + 1, device="cuda").half()[1:].view(q.shape)
    try:
        attn(shifted, kv, kv, scale=0.1)
    except sketch.ArgumentError as e:
        assert "16 bytes" in str(e), e
    else:
        raise AssertionError("a misaligned Q with known shapes was launched")


def test_torch_compile_without_graph_breaks():
    lib = compile_example("gemm_bias_relu.sketch")

    def block(x, w, bias):
        return lib.gemm_bias_relu(torch.nn.functional.gelu(x), w, bias) * 2

    compiled = torch.compile(block, fullgraph=True)  # a graph break is an error
    x = torch.randn(300, 256, device="cuda").half()
    w = (torch.randn(256, 200, device="cuda") / 16).half()
    bias = torch.randn(200, device="cuda").half()
    error = relative_error(compiled(x, w, bias), block(x, w, bias).double())
    assert error < 1e-2, f"compiled vs eager: relative error {error:.2e}"
    torch._dynamo.reset()


def test_custom_op_opcheck():
    """torch.library.opcheck: schema, fake (meta) implementation and autograd registration."""
    lib = compile_example("gemm_bias_relu.sketch")
    a = torch.randn(64, 32, device="cuda").half()
    b = torch.randn(32, 48, device="cuda").half()
    bias = torch.randn(48, device="cuda").half()
    d = torch.empty(64, 48, device="cuda").half()
    torch.library.opcheck(lib.gemm_bias_relu.op, (a, b, bias, d),
                          test_utils=("test_schema", "test_faketensor"))


BAD_ARGUMENTS = textwrap.dedent("""
    import os, sys, torch
    sys.path.insert(0, os.path.join({root!r}, "python"))
    import sketch
    ex = os.path.join({root!r}, "examples")
    gemm = sketch.compile(os.path.join(ex, "gemm_bias_relu.sketch")).gemm_bias_relu
    epi = sketch.compile(os.path.join(ex, "gemm_epilogue.sketch")).gemm_epilogue
    attn = sketch.compile(os.path.join(ex, "attention_gqa.sketch")).attention_gqa
    conv_lib = sketch.compile(os.path.join(ex, "conv2d_nhwc.sketch"))
    conv = next(iter(conv_lib.kernels.values()))
    h = lambda *s: torch.randn(*s, device="cuda").half()
    a, b, bias = h(64, 32), h(32, 48), h(48)
    bigq = h(4 * 16 * 128 + 1)
    q, kv = h(1, 4, 16, 128), h(1, 2, 16, 128)
    gemm(a, b, bias), attn(q, kv, kv, scale=0.1)  # good calls first: their plans must not let bad ones through
    cases = {{
        "float32 A": lambda: gemm(a.float(), b, bias),
        "bfloat16 B": lambda: gemm(a, b.bfloat16(), bias),
        "int A": lambda: gemm(a.int(), b, bias),
        "CPU A": lambda: gemm(a.cpu(), b, bias),
        "K mismatch": lambda: gemm(a, b[:16], bias),
        "bias length": lambda: gemm(a, b, bias[:10]),
        "1-d A": lambda: gemm(a.flatten(), b, bias),
        "3-d A": lambda: gemm(a[None], b, bias),
        "transposed B": lambda: gemm(a, h(48, 32).t(), bias),
        "strided A": lambda: gemm(h(64, 64)[:, ::2], b, bias),
        "misaligned Q (attention needs 16 bytes)": lambda: attn(bigq[1:].view(1, 4, 16, 128), kv, kv,
                                                                scale=0.1),
        "misaligned output": lambda: attn(q, kv, kv, bigq[1:].view(1, 4, 16, 128), scale=0.1),
        "None A": lambda: gemm(None, b, bias),
        "no arguments": lambda: gemm(),
        "too many": lambda: gemm(a, b, bias, h(64, 48), a),
        "unknown keyword": lambda: gemm(a, b, bias, E=a),
        "twice": lambda: gemm(a, b, bias, A=a),
        "D of wrong shape": lambda: gemm(a, b, bias, h(48, 64)),
        "D of wrong dtype": lambda: gemm(a, b, bias, h(64, 48).float()),
        "D on CPU": lambda: gemm(a, b, bias, h(64, 48).cpu()),
        "number for a tensor": lambda: gemm(1.0, b, bias),
        "list for a tensor": lambda: gemm([[1.0]], b, bias),
        "string scalar": lambda: epi(h(8, 8), h(8, 8), h(8, 8), h(8), alpha="1", beta=1.0),
        "tensor scalar": lambda: epi(h(8, 8), h(8, 8), h(8, 8), h(8), alpha=h(1), beta=1.0),
        "bool scalar": lambda: epi(h(8, 8), h(8, 8), h(8, 8), h(8), alpha=True, beta=1.0),
        "missing scalar": lambda: epi(h(8, 8), h(8, 8), h(8, 8), h(8), alpha=1.0),
        "heads not a multiple": lambda: attn(h(1, 3, 16, 128), kv, kv, scale=0.1),
        "no keys": lambda: attn(q, h(1, 2, 0, 128), h(1, 2, 0, 128), scale=0.1),
        "head dim 64": lambda: attn(h(1, 4, 16, 64), h(1, 2, 16, 64), h(1, 2, 16, 64), scale=0.1),
        "K and V lengths differ": lambda: attn(q, kv, h(1, 2, 17, 128), scale=0.1),
        "attention output too small": lambda: attn(q, kv, kv, h(1, 4, 15, 128), scale=0.1),
        "requires grad": lambda: gemm(a.clone().requires_grad_(), b, bias),
        "conv channels": lambda: conv(h(1, 8, 8, 24), h(40, 3, 3, 16), h(40)),
        "conv window too large": lambda: conv(h(1, 1, 1, 24), h(40, 5, 5, 24), h(40)),
        "conv wrong output": lambda: conv(h(1, 8, 8, 24), h(40, 3, 3, 24), h(40), h(1, 8, 8, 41)),
        "conv output size": lambda: conv(h(1, 8, 8, 24), h(40, 3, 3, 24), h(40), h(1, 7, 8, 40)),
        "conv bias length": lambda: conv(h(1, 8, 8, 24), h(40, 3, 3, 24), h(39)),
    }}
    for what, call in cases.items():
        try:
            call()
        except (TypeError, ValueError) as e:
            print(f"ok {{what}}: {{type(e).__name__}}: {{e}}")
            continue
        except Exception as e:
            print(f"WRONG {{what}}: {{type(e).__name__}}: {{e}}")
            continue
        print(f"WRONG {{what}}: accepted")
    torch.cuda.synchronize()
    print("DONE")
""")


def test_bad_arguments_raise_never_crash():
    result = subprocess.run([sys.executable, "-c", BAD_ARGUMENTS.format(root=ROOT)],
                            capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"exit status {result.returncode} (a crash?):\n{out[-3000:]}"
    assert "DONE" in result.stdout, out[-3000:]
    wrong = [line for line in result.stdout.splitlines() if line.startswith("WRONG")]
    assert not wrong, "\n".join(wrong)
    print(result.stdout.count("\nok ") + result.stdout.startswith("ok "), "bad calls raised")


def test_readme_python_quickstart():
    """The README's 'Python quick start' block, run as it is written (from the root)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    match = re.search(r"## Python quick start.*?```python\n(.*?)```", readme, re.S)
    assert match, "README.md has no '## Python quick start' python block"
    code = match.group(1)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert result.returncode == 0, f"the quick start failed:\n{result.stderr[-3000:]}"
