"""Helpers of the GPU tests and benchmarks: call generated host functions by name.

kernel(name) returns a callable taking the host function's parameters as
keyword arguments (tensor parameters as torch tensors or None, scalars as
numbers, size symbols as ints); it fills in the stream and returns the
cudaError_t as an int. The parameter list is read from the generated headers
in SKETCH_GPU_GEN, so a test never repeats a signature.

sketch_params(path) reads the kernel headers of a .sketch file: for each
kernel, its parameters as (name, dtype, dims) with dims as symbol strings;
sketch_kernels(path) also gives each kernel's text.
"""
import ctypes
import glob
import math
import os
import re

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
CUDA_ERROR_INVALID_VALUE = 1

_library = None
_prototypes = None


def library():
    global _library
    if _library is None:
        path = os.environ.get("SKETCH_GPU_LIB", "")
        if not os.path.exists(path):
            raise FileNotFoundError(f"no kernel library '{path}' (SKETCH_GPU_LIB): "
                                    "test/gpu/run.sh builds it")
        _library = ctypes.CDLL(path)
    return _library


def prototypes():
    """Host function name -> [(C type, parameter name)], from the generated headers."""
    global _prototypes
    if _prototypes is None:
        _prototypes = {}
        gen = os.environ.get("SKETCH_GPU_GEN", "")
        for header in glob.glob(os.path.join(gen, "**", "*.h"), recursive=True):
            with open(header) as f:
                for m in re.finditer(r'extern "C" cudaError_t (\w+)\(([^)]*)\);', f.read()):
                    params = []
                    for p in m.group(2).split(","):
                        p = p.strip()
                        name = re.search(r"(\w+)$", p).group(1)
                        params.append((p[: -len(name)].strip(), name))
                    _prototypes[m.group(1)] = params
    return _prototypes


def generated_arch():
    """The --arch the generated sources were compiled for (generate.sh's ARCH file)."""
    path = os.path.join(os.environ.get("SKETCH_GPU_GEN", ""), "ARCH")
    return open(path).read().strip() if os.path.exists(path) else ""


def launched_kernels(run):
    """Names of the CUDA kernels run() launches (torch.profiler), templates included; None
    under compute-sanitizer (test/gpu/sanitize.sh sets SKETCH_SANITIZER), whose CUPTI
    subscription leaves the profiler none: run() still runs, its result is checked by the
    caller, only the kernel names are unknown."""
    if os.environ.get("SKETCH_SANITIZER"):
        run()
        torch.cuda.synchronize()
        return None
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def _argument(ctype, value):
    if ctype == "cudaStream_t":
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    if ctype.endswith("*"):
        return ctypes.c_void_p(None if value is None else value.data_ptr())
    if ctype == "float":
        return ctypes.c_float(value)
    if ctype == "int32_t":
        return ctypes.c_int32(value)
    if ctype == "int64_t":
        return ctypes.c_int64(value)
    raise ValueError(f"unknown parameter type {ctype}")


def kernel(name):
    params = prototypes().get(name)
    if params is None:
        raise LookupError(f"no generated host function '{name}' (did sketchc fail on it?)")
    fn = getattr(library(), name)
    fn.restype = ctypes.c_int

    def call(**values):
        args = []
        for ctype, pname in params:
            if ctype != "cudaStream_t" and pname not in values:
                raise TypeError(f"{name}: missing argument '{pname}'")
            args.append(_argument(ctype, values.get(pname)))
        return fn(*args)

    call.params = params
    return call


def sketch_params(path):
    """{kernel name: [(param, dtype, [dims])]} from the kernel headers of a sketch file."""
    with open(path) as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    kernels = {}
    for m in re.finditer(r"kernel\s+(\w+)\s*\((.*?)\)\s*:", text, re.S):
        params = []
        for p in re.finditer(r"(\w+)\s*:\s*(\w+)(?:\s*\[([^\]]*)\])?", m.group(2)):
            dims = [d.strip() for d in p.group(3).split(",")] if p.group(3) else []
            params.append((p.group(1), p.group(2), dims))
        kernels[m.group(1)] = params
    return kernels


def sketch_kernels(path):
    """(name, params, body) for each kernel of a sketch file; body is the file's text from
    the kernel's header on (its own statements come first)."""
    with open(path) as f:
        text = f.read()
    for name, params in sketch_params(path).items():
        yield name, params, text[text.index(f"kernel {name}("):]


def conv_window(text):
    """((stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w)) of the first
    `with stride (..) pad (..) [dilation (..)]` in `text` (dilation 1 when left out)."""
    m = re.search(r"with stride \((\d+), (\d+)\) pad \((\d+), (\d+)\)"
                  r"(?: dilation \((\d+), (\d+)\))?", text)
    return ((int(m.group(1)), int(m.group(2))), (int(m.group(3)), int(m.group(4))),
            (int(m.group(5) or 1), int(m.group(6) or 1)))


def conv_out_size(n_in, filt, stride, pad, dil):
    """Output rows (or columns) of a convolution, as torch computes them."""
    return (n_in + 2 * pad - dil * (filt - 1) - 1) // stride + 1


def device_tensor(shape, dtype_name, misalign=False, poison=False, scale=1.0):
    """A CUDA tensor of `shape` for a kernel parameter: NaN everywhere (`poison`, for
    outputs) or random / `scale`; with `misalign`, its base one element past its
    allocation's (16-byte aligned) start, so the kernels' element paths run."""
    count = math.prod(shape)
    storage = torch.empty(count + 8, device="cuda", dtype=DTYPES[dtype_name])
    x = (storage[1:count + 1] if misalign else storage[:count]).view(shape)
    if poison:
        return x.fill_(float("nan"))
    return x.copy_(torch.randn(shape, device="cuda") / scale)


def back_to_back_failures(chain, buffers, expected, label):
    """chain(sync) runs a sequence of calls (torch.cuda.synchronize() after each when
    `sync`) through `buffers` and returns the last output; `expected` is that output of a
    synchronized run (16-bit elements). Runs the calls back to back, then as a CUDA graph
    replayed three times, the buffers poisoned before each; the failures: a result not
    bitwise `expected`."""
    def differs(out):
        return not torch.equal(out.view(torch.int16), expected.view(torch.int16))

    failures = []
    for b in buffers:
        b.fill_(float("nan"))
    eager = chain(False)
    torch.cuda.synchronize()
    if differs(eager):
        failures.append(f"{label}: back-to-back calls differ from synchronized ones")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        captured = chain(False)
    for b in buffers:
        b.fill_(float("nan"))
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    if differs(captured):
        failures.append(f"{label}: the CUDA graph's calls differ from synchronized ones")
    return failures


def call_and_check(name, values, out, reference, tol, what):
    """Calls kernel `name` with the parameters it takes from `values`, expects cudaSuccess,
    then checks `out` against reference() (see check_close, rtol = atol_scale = tol)."""
    call = kernel(name)
    used = {p for _, p in call.params}
    status = call(**{p: v for p, v in values.items() if p in used})
    torch.cuda.synchronize()
    assert status == 0, f"{what}: returned cudaError {status}"
    return check_close(out, reference(), tol, tol, what)


def check_close(out, ref, rtol, atol_scale, what):
    """Every element: |out - ref| <= rtol |ref| + atol_scale * rms(ref); all finite.

    Raises AssertionError with the worst element; returns the normwise error."""
    out = out.double()
    assert torch.isfinite(out).all(), \
        f"{what}: {(~torch.isfinite(out)).sum().item()} elements not finite (unwritten or NaN)"
    rms = ref.pow(2).mean().sqrt().item() if ref.numel() else 0.0
    err = (out - ref).abs()
    limit = rtol * ref.abs() + atol_scale * max(rms, 1e-30)
    bad = err > limit
    norm = ((out - ref).norm() / max(ref.norm().item(), 1e-30)).item()
    if bad.any():
        index = torch.nonzero(bad)[0].tolist()
        raise AssertionError(
            f"{what}: {bad.sum().item()} of {ref.numel()} elements off; at {index} got "
            f"{out[tuple(index)].item():.6g}, expected {ref[tuple(index)].item():.6g}; "
            f"normwise error {norm:.3g}")
    return norm
