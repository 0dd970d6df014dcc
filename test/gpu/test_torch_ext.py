"""The PyTorch extension example (examples/torch/) on the suite's generated kernel.

Builds examples/torch/gemm_bias_relu_binding.cpp with torch.utils.cpp_extension
around SKETCH_GPU_GEN/example_gemm_bias_relu.cu (generate.sh compiles
examples/gemm_bias_relu.sketch into it) and runs examples/torch/check.py's
checks: values at several shapes against an f64 reference, rejected bad
inputs, and the caller's stream.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))

import check  # noqa: E402  (examples/torch/check.py)
import gemm_relu_ext  # noqa: E402


def test_torch_extension():
    with tempfile.TemporaryDirectory() as build_dir:
        ext = gemm_relu_ext.load(os.environ["SKETCH_GPU_GEN"], "example_gemm_bias_relu",
                                 build_dir)
        check.run_all(ext)
