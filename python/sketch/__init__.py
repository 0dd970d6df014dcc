"""sketch: compile .sketch kernels and call them on torch tensors.

    import sketch, torch
    lib = sketch.compile("examples/gemm_bias_relu.sketch")      # or the source text
    A = torch.randn(512, 256, device="cuda", dtype=torch.half)
    B = torch.randn(256, 384, device="cuda", dtype=torch.half)
    D = lib.gemm_bias_relu(A, B, bias=torch.randn(384, device="cuda", dtype=torch.half))

compile() runs sketchc and nvcc (cached by a hash of the sketch, the options
and the compiler), and returns a Module with one callable per kernel. A
callable takes the kernel's parameters by name or position: tensors, and
Python numbers for scalars; the size symbols come from the shapes. Tensors the
kernel only writes may be left out: they are allocated and returned. Every
argument is checked before anything is launched (an exception names the
parameter); the kernel runs on the current CUDA stream. Each kernel is also a
torch.library custom op (`module.<kernel>.op`), so it works under
torch.compile. docs/python.md has the details.
"""
import json
import os

from ._api import ArgumentError, read_api  # noqa: F401
from ._build import Build, CompileError, find_sketchc  # noqa: F401

__all__ = ["compile", "Module", "ArgumentError", "CompileError", "device_arch"]


def device_arch(device=None):
    """The sketchc --arch for a CUDA device: sm_90a on Hopper, sm_80 elsewhere (its
    machine code runs on Ampere and Ada, and its PTX on later GPUs)."""
    import torch
    major, _minor = torch.cuda.get_device_capability(device)
    if major < 8:
        raise CompileError(f"sketch kernels need compute capability 8.0 or newer; the device "
                           f"has {major}.{_minor}")
    return "sm_90a" if major == 9 else "sm_80"


def _read_source(path_or_source):
    """(text, path): a path to a .sketch file, or the source text itself."""
    if isinstance(path_or_source, os.PathLike) or (
            isinstance(path_or_source, str) and "\n" not in path_or_source
            and os.path.isfile(path_or_source)):
        path = os.fspath(path_or_source)
        with open(path) as f:
            return f.read(), os.path.abspath(path)
    if not isinstance(path_or_source, str):
        raise TypeError(f"compile() takes a path or the sketch source, got "
                        f"{type(path_or_source).__name__}")
    if "kernel" not in path_or_source:
        raise CompileError(f"'{path_or_source}' is neither a file nor sketch source "
                           f"(no kernel in it)")
    return path_or_source, None


class Module:
    """The kernels of one compiled sketch, each a checked callable (see the package doc)."""

    def __init__(self, folder):
        import ctypes
        from ._torch_ops import KernelOp
        self.folder = folder
        self.library_path = os.path.join(folder, "libkernels.so")
        with open(os.path.join(folder, "api.json")) as f:
            self.api = json.load(f)
        self.arch = self.api["arch"]
        self._library = ctypes.CDLL(self.library_path)
        key = os.path.basename(folder)[:12]
        self.kernels = {}
        for sig in read_api(self.api):
            self.kernels[sig.name] = KernelOp(sig, self._library, key)
            if not hasattr(self, sig.name):  # plain attributes: torch.compile traces them
                setattr(self, sig.name, self.kernels[sig.name])

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"no kernel '{name}' in this sketch; it has "
                             f"{', '.join(kernels) or 'none'}")

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __repr__(self):
        return (f"<sketch.Module {self.arch}: "
                f"{'; '.join(k.sig.describe() for k in self.kernels.values())}>")


def compile(path_or_source, arch=None, defines=None, cache_dir=None, verbose=False):
    """Compiles a sketch (a path or the source text) for `arch` (default: the current
    CUDA device's; a comma-separated list such as "sm_80,sm_90a" builds one library whose
    functions pick the variant for the device they run on), with size symbols bound by
    `defines` ({"N0": 64}); returns a Module."""
    text, path = _read_source(path_or_source)
    build = Build(text, arch or device_arch(), defines or {}, cache_dir=cache_dir, path=path)
    return Module(build.run(verbose=verbose))
