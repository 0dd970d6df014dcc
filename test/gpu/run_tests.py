#!/usr/bin/env python3
"""The GPU suite's runner: every test_* function of every test/gpu/test_*.py.

A test passes when it returns and fails when it raises (an assertion, a CUDA
error, a missing kernel). Each prints one line; the last line is
`N passed, N failed, N skipped`. Without a GPU (no torch, no CUDA device, or no
library in SKETCH_GPU_LIB) every test is reported skipped, and the exit status
is --skip-code (ctest's SKIP_RETURN_CODE); otherwise it is 1 when a test failed.

Modules find the kernels through the environment that test/gpu/run.sh sets:
SKETCH_GPU_LIB (the shared library of all generated kernels) and SKETCH_GPU_GEN
(the directory of the generated .cu/.h files); sketch_gpu.py wraps both, and a
test that needs the library fails when it is not there. The Python package's
tests (test_python_package.py, test_llama_layer.py) build their own kernels
with sketch.compile and the sketchc that $SKETCHC or PATH names.
"""
import argparse
import ast
import glob
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def test_names(path):
    """The test_* functions of a module, read without importing it."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def why_no_gpu():
    """None when the GPU tests can run, else the reason they cannot."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def load(path):
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_one(fn):
    """Runs one test; returns None or the failure text."""
    import torch
    try:
        torch.manual_seed(0)
        fn()
        torch.cuda.synchronize()
        return None
    except AssertionError as e:
        return str(e) or traceback.format_exc(limit=3).strip().splitlines()[-1]
    except Exception as e:  # a CUDA error or a missing kernel fails the test too
        return f"{type(e).__name__}: {e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", default="",
                        help="run only tests whose module::name contains one of these "
                             "comma-separated strings")
    parser.add_argument("--skip-code", type=int, default=0,
                        help="exit status when every test was skipped")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    reason = why_no_gpu()
    if reason is None:
        import torch
        print(f"device: {torch.cuda.get_device_name()}", flush=True)
    passed = failed = skipped = 0
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        module_name = os.path.splitext(os.path.basename(path))[0]
        patterns = args.pattern.split(",")
        names = [n for n in test_names(path)
                 if any(p in f"{module_name}::{n}" for p in patterns)]
        if not names:
            continue
        module, load_error = None, None
        if reason is None:
            try:
                module = load(path)
            except Exception as e:
                load_error = f"cannot import: {type(e).__name__}: {e}"
        for name in names:
            label = f"{module_name}::{name}"
            if reason is not None:
                skipped += 1
                print(f"SKIP {label} ({reason})", flush=True)
                continue
            start = time.time()
            error = load_error or run_one(getattr(module, name))
            seconds = time.time() - start
            if error:
                failed += 1
                print(f"FAIL {label} ({seconds:.1f} s): {error}", flush=True)
            else:
                passed += 1
                print(f"PASS {label} ({seconds:.1f} s)", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    if failed:
        return 1
    if skipped and not passed:
        return args.skip_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
