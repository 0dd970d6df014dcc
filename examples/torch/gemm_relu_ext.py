"""A sketchc kernel as a PyTorch extension: gemm_bias_relu(A, B, bias) -> D.

    import gemm_relu_ext
    ext = gemm_relu_ext.load()            # builds once, then cached
    d = ext.gemm_bias_relu(a, b, bias)    # relu(a @ b + bias), f16 CUDA tensors

The generated CUDA (examples/torch/generate.sh writes it into .gen/torch/) is
compiled with plain nvcc, as sketchc's header comment says, into one object;
torch.utils.cpp_extension.load builds the binding (gemm_bias_relu_binding.cpp)
and links that object into the extension. Compiling the generated file
separately keeps torch's extension flags (-D__CUDA_NO_HALF_OPERATORS__ ...)
away from it. Works offline: it needs nvcc, ninja and torch only.
"""
import os
import subprocess
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def _arch(gen_dir):
    path = os.path.join(gen_dir, "ARCH")
    return open(path).read().strip() if os.path.exists(path) else "sm_90a"


def compile_generated(source, gen_dir, build_dir):
    """nvcc -c the generated .cu (for the arch generate.sh recorded); returns the object."""
    arch = _arch(gen_dir)
    obj = os.path.join(build_dir, os.path.basename(source)[:-3] + ".o")
    command = ["nvcc", "-std=c++17", "-O3", "-I", os.path.join(ROOT, "runtime", "include"),
               "-I", gen_dir, f"-gencode=arch=compute_{arch[3:]},code={arch}",
               "-Xcompiler", "-fPIC", "-c", source, "-o", obj]
    if not os.path.exists(obj) or os.path.getmtime(obj) < os.path.getmtime(source):
        subprocess.run(command, check=True)
    return obj


def load(gen_dir=None, source_name="gemm_bias_relu", build_dir=None, verbose=False):
    """Builds (or reuses) the extension; returns an object with gemm_bias_relu(A, B, bias)
    (the binding behind Python argument checks; .binding is the raw module).

    gen_dir holds SOURCE_NAME.cu and SOURCE_NAME.h from sketchc (default .gen/torch);
    the GPU suite passes its own directory, where the file is example_gemm_bias_relu."""
    from torch.utils.cpp_extension import load as load_extension
    gen_dir = os.path.abspath(gen_dir or os.path.join(ROOT, ".gen", "torch"))
    build_dir = os.path.abspath(build_dir or os.path.join(gen_dir, "build"))
    os.makedirs(build_dir, exist_ok=True)
    source = os.path.join(gen_dir, source_name + ".cu")
    if not os.path.exists(source):
        raise FileNotFoundError(f"{source} not found: run examples/torch/generate.sh first")
    if source_name != "gemm_bias_relu":  # the binding includes "gemm_bias_relu.h"
        with open(os.path.join(build_dir, "gemm_bias_relu.h"), "w") as f:
            f.write(f'#include "{source_name}.h"\n')
    obj = compile_generated(source, gen_dir, build_dir)
    return checked(load_extension(
        name="sketch_gemm_bias_relu",
        sources=[os.path.join(HERE, "gemm_bias_relu_binding.cpp")],
        extra_include_paths=[build_dir, gen_dir],
        extra_cflags=["-O2"],
        extra_ldflags=[obj],
        with_cuda=True,
        build_directory=build_dir,
        verbose=verbose))


def _check_input(t, name, dims):
    import torch
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float16:
        raise TypeError(f"{name} must be a float16 tensor, got {getattr(t, 'dtype', type(t))}")
    if not t.is_cuda:
        raise ValueError(f"{name} must be a CUDA tensor")
    if t.dim() != dims or not t.is_contiguous():
        raise ValueError(f"{name} must be a contiguous {dims}-d tensor, got shape "
                         f"{tuple(t.shape)} strides {t.stride()}")


def checked(ext):
    """The extension's operator behind Python checks of its arguments.

    The binding checks the same things with TORCH_CHECK, but on the GPU machine
    (torch 2.11) passing it bad arguments crashed the process (segmentation
    fault; cause not found, README.md), so they are turned away here, as
    Python exceptions, before they reach C++."""
    def gemm_bias_relu(A, B, bias):
        _check_input(A, "A", 2)
        _check_input(B, "B", 2)
        _check_input(bias, "bias", 1)
        if B.device != A.device or bias.device != A.device:
            raise ValueError("A, B and bias must be on one device")
        if B.shape[0] != A.shape[1] or bias.shape[0] != B.shape[1]:
            raise ValueError(f"shapes do not match: A {tuple(A.shape)}, B {tuple(B.shape)}, "
                             f"bias {tuple(bias.shape)}")
        return ext.gemm_bias_relu(A, B, bias)
    gemm_bias_relu.__doc__ = "D = relu(A @ B + bias); f16 CUDA tensors A[M,K], B[K,N], bias[N]"
    return types.SimpleNamespace(gemm_bias_relu=gemm_bias_relu, binding=ext)
