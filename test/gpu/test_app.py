"""Runs the example application (examples/app/main.cu) on the GPU.

The app's kernel is the suite's example_mlp_layer (test/gpu/generate.sh compiles
examples/app/mlp_layer.sketch into it). main.cu includes "mlp_layer.h", so a
one-line header forwards to example_mlp_layer.h; main.cu is built with nvcc and
linked against the suite's library (SKETCH_GPU_LIB). The app checks every
element against its own reference kernel and prints PASSED; the test runs it
at its default size and at a ragged one.
"""
import os
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def build_app(workdir):
    gen = os.environ["SKETCH_GPU_GEN"]
    lib = os.path.abspath(os.environ["SKETCH_GPU_LIB"])
    assert os.path.exists(os.path.join(gen, "example_mlp_layer.h")), \
        "no example_mlp_layer.h in SKETCH_GPU_GEN (did generate.sh compile examples/app?)"
    with open(os.path.join(workdir, "mlp_layer.h"), "w") as f:
        f.write('#include "example_mlp_layer.h"\n')
    arch = open(os.path.join(gen, "ARCH")).read().strip() if os.path.exists(
        os.path.join(gen, "ARCH")) else "sm_90a"
    binary = os.path.join(workdir, "mlp_layer")
    command = ["nvcc", "-std=c++17", "-O2", f"-gencode=arch=compute_{arch[3:]},code={arch}",
               "-I", workdir, "-I", gen, os.path.join(ROOT, "examples", "app", "main.cu"), lib,
               "-Xlinker", f"-rpath,{os.path.dirname(lib)}", "-o", binary]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"nvcc failed:\n{result.stderr[-2000:]}"
    return binary


def test_mlp_layer_app():
    with tempfile.TemporaryDirectory() as workdir:
        binary = build_app(workdir)
        for size in [[], ["1000", "1000", "1000"]]:
            result = subprocess.run([binary] + size, capture_output=True, text=True, timeout=120)
            out = result.stdout + result.stderr
            print(f"  {out.strip().splitlines()[0] if out.strip() else '(no output)'}")
            assert result.returncode == 0 and "PASSED" in out, \
                f"mlp_layer {' '.join(size)}: exit {result.returncode}: {out[-1000:]}"
