"""The GEMM checks shared by test_gemm.py (tensor cores) and test_sgemm.py (f32 SIMT).

GemmCases(folder, epilogues) reads the kernels of test/gpu/FOLDER/*.sketch. A
kernel's epilogue is epilogues[SUFFIX], SUFFIX being its name after the second
'_' (tc_f16_bias_relu -> "bias_relu"), as a function of the f64 product `acc`,
the f64 tensors t and the scalars s; with default=KEY, kernels without an entry
use epilogues[KEY]. Every case draws fresh random inputs (never zeros), fills
the output D with NaN, calls the generated host function and compares every
element with the f64 reference on the same (rounded) inputs:
    |out - ref| <= tol * |ref| + tol * rms(ref),  tol 1e-4 (f32 out), 1e-2 (f16/bf16 out).
"""
import glob
import math
import os
import re

import torch

import sketch_gpu

HERE = os.path.dirname(os.path.abspath(__file__))
SCALARS = {"alpha": 0.75, "beta": -1.25, "slope": 0.1}
TOLERANCE = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-4}
BATCH_SIZES = (("Bt", 3), ("H", 2))


def relu(x):
    return x.clamp(min=0)


def leaky(x, s):
    return torch.where(x >= 0, x, s * x)


def expr(acc, t, s):
    """The expression epilogue of the `*_expr` kernels."""
    a, b = s["alpha"], s["beta"]
    half = torch.tensor(-0.5, dtype=acc.dtype, device=acc.device)
    first = torch.maximum(relu(a * acc + b * t["C"]) - t["bias"], half)
    return first + torch.minimum(torch.exp(-acc * acc), torch.tanh(acc)) / 2 + leaky(acc, 0.1)


def sm90a_with_132_sms():
    """Whether the generated kernels are sm_90a and run on a compute capability 9.0 GPU of 132
    SMs (H100 SXM, H200), the device the host functions' size rules' expectations are for."""
    return (sketch_gpu.generated_arch() == "sm_90a" and torch.cuda.get_device_capability() == (9, 0)
            and torch.cuda.get_device_properties(0).multi_processor_count == 132)


class GemmCases:
    def __init__(self, folder, epilogues, default=None):
        self.sketches = sorted(glob.glob(os.path.join(HERE, folder, "*.sketch")))
        self.epilogues = epilogues
        self.default = default
        self._kernels = None

    def kernels(self):
        """{name: (params, transpose A, transpose B)} read from the sketch files."""
        if self._kernels is None:
            self._kernels = {}
            for path in self.sketches:
                for name, plist, body in sketch_gpu.sketch_kernels(path):
                    m = re.search(r"Compute GEMM (\w+)(\^T)?, (\w+)(\^T)?", body)
                    self._kernels[name] = (plist, bool(m.group(2)), bool(m.group(4)))
        return self._kernels

    def epilogue_of(self, name):
        suffix = name.split("_", 2)[2]
        if self.default is not None:
            return self.epilogues.get(suffix, self.epilogues[self.default])
        return self.epilogues[suffix]

    def batch_sizes(self, name):
        dims = {d for _, _, ds in self.kernels()[name][0] for d in ds}
        return {s: v for s, v in BATCH_SIZES if s in dims}

    def make_inputs(self, name, sizes, misalign=False):
        """Random tensors for every parameter (NaN for the output), scalars, sizes; with
        `misalign` True every tensor's base one element off 16 bytes, with a name only that one's."""
        plist, _, _ = self.kernels()[name]
        k = sizes.get("K", 1)
        values, tensors = {}, {}
        for pname, dtype, dims in plist:
            if dtype in ("f32", "i32") and not dims:
                values[pname] = SCALARS[pname]
                continue
            shape = [sizes[d] if not d.isdigit() else int(d) for d in dims]
            off = misalign is True or misalign == pname
            x = sketch_gpu.device_tensor(shape, dtype, off, poison=pname == "D",
                                         scale=math.sqrt(max(k, 1)) if pname == "B" else 1)
            values[pname] = x
            tensors[pname] = x
        values.update(sizes)
        return values, tensors

    def reference(self, name, tensors):
        _, ta, tb = self.kernels()[name]
        t = {n: x.double() for n, x in tensors.items() if n != "D"}
        a = t["A"].transpose(-1, -2) if ta else t["A"]
        b = t["B"].transpose(-1, -2) if tb else t["B"]
        return self.epilogue_of(name)(torch.matmul(a, b), t, SCALARS)

    def out_dtype(self, name):
        return next(d for p, d, _ in self.kernels()[name][0] if p == "D")

    def check(self, name, m, n, k, misalign=False):
        sizes = {"M": m, "N": n, "K": k, **self.batch_sizes(name)}
        values, tensors = self.make_inputs(name, sizes, misalign)
        return sketch_gpu.call_and_check(
            name, values, tensors["D"], lambda: self.reference(name, tensors),
            TOLERANCE[self.out_dtype(name)],
            f"{name} {m}x{n}x{k}{' misaligned ' + str(misalign) if misalign else ''}")

    def sweep(self, names, shapes, misalign=False):
        """Checks every (m, n, k) of `shapes` on every kernel; reports all failures at once."""
        failures = []
        for name in names:
            for m, n, k in shapes:
                try:
                    self.check(name, m, n, k, misalign)
                except AssertionError as e:
                    failures.append(str(e))
        assert not failures, "; ".join(failures[:4]) + (f" (+{len(failures) - 4} more)"
                                                         if len(failures) > 4 else "")

    def assert_ran(self, name, m, n, k, kernel):
        """Kernel `name` at M x N x K (unbatched) launched a kernel whose name contains
        `kernel` (when the profiler can tell)."""
        values, _ = self.make_inputs(name, {"M": m, "N": n, "K": k})
        call = sketch_gpu.kernel(name)
        used = {p for _, p in call.params}
        ran = sketch_gpu.launched_kernels(lambda: call(**{p: v for p, v in values.items()
                                                          if p in used}))
        assert ran is None or any(kernel in r for r in ran), f"{m}x{n}x{k}: no {kernel} ran: {ran}"

    def check_rejects_bad_arguments(self, name):
        """Null pointers, negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
        call = sketch_gpu.kernel(name)
        values, tensors = self.make_inputs(name, {"M": 64, "N": 64, "K": 64})
        invalid = sketch_gpu.CUDA_ERROR_INVALID_VALUE
        assert call(**dict(values, bias=None)) == invalid, "null bias accepted"
        assert call(**dict(values, K=-1)) == invalid, "K = -1 accepted"
        assert call(**dict(values, M=0)) == 0, "M = 0 is not a no-op"
        torch.cuda.synchronize()
        assert torch.isnan(tensors["D"].float()).all(), "a rejected call wrote its output"
