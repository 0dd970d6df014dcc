#!/usr/bin/env python3
"""The package's call plans without a GPU or torch (run by ctest).

sketch._torch_ops over a stand-in torch (torch_stand_in.py) and a stand-in library that
records each host-function call: a call like an earlier checked one reuses its CallPlan
and passes this call's pointers, allocates its left-out outputs, and still rejects a
misaligned pointer, a tensor that requires grad, other shapes or another argument form.
    python3 python/tests/test_call_plans.py path/to/sketchc
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import torch_stand_in as torch  # noqa: E402

sys.modules["torch"] = torch
from sketch._api import ArgumentError, read_api  # noqa: E402
from sketch._torch_ops import KernelOp  # noqa: E402

SKETCHC = os.path.join(ROOT, "build", "compiler", "sketchc")


class RecordingLibrary:
    """Each host function returns cudaSuccess and appends (name, arguments) to `calls`."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def host_function(*arguments):
            self.calls.append((name, arguments))
            return 0
        return host_function


def kernels(example):
    out = subprocess.run([SKETCHC, os.path.join(ROOT, "examples", *example), "--emit=api"],
                         capture_output=True, text=True, check=True).stdout
    library = RecordingLibrary()
    return {sig.name: KernelOp(sig, library, "test") for sig in read_api(json.loads(out))}, library


class CallPlanTest(unittest.TestCase):
    def setUp(self):
        self.ops, self.library = kernels(("llama", "decoder_layer.sketch"))
        self.linear = self.ops["llama_linear"]
        self.x = torch.Tensor((3, 64), torch.bfloat16)
        self.w = torch.Tensor((128, 64), torch.bfloat16)

    def last_arguments(self):
        return self.library.calls[-1][1]

    def test_second_call_runs_the_plan_with_its_own_pointers(self):
        first = self.linear(self.x, self.w)
        second = self.linear(self.x, self.w)
        self.assertEqual(len(self.linear._plans), 1)
        self.assertEqual(second.shape, (3, 128))
        self.assertEqual(self.last_arguments(),
                         (self.x.data_ptr(), self.w.data_ptr(), second.data_ptr(), 3, 64, 128, 77))
        self.assertNotEqual(first.data_ptr(), second.data_ptr())

    def test_keywords_in_any_order_and_outputs_given_or_none(self):
        y = torch.Tensor((3, 128), torch.bfloat16)
        for _ in range(2):
            self.assertIs(self.linear(W=self.w, X=self.x, Y=y), y)
            self.assertEqual(self.last_arguments()[:3],
                             (self.x.data_ptr(), self.w.data_ptr(), y.data_ptr()))
        for _ in range(2):
            out = self.linear(self.x, self.w, Y=None)
            self.assertEqual(self.last_arguments()[2], out.data_ptr())
        for _ in range(2):
            out = self.linear(self.x, self.w, None)
            self.assertEqual(self.last_arguments()[2], out.data_ptr())

    def test_misaligned_pointer_with_known_shapes(self):
        attention = self.ops["llama_attention"]
        q = torch.Tensor((1, 16, 1, 128), torch.bfloat16)
        kv = torch.Tensor((1, 4, 77, 128), torch.bfloat16)
        attention(q, kv, kv, scale=0.1)
        attention(q, kv, kv, scale=1)  # an int for an f32 scalar: its own plan
        self.assertEqual(len(attention._plans), 2)
        shifted = torch.Tensor(q.shape, torch.bfloat16, address=q.data_ptr() + 2)
        calls = len(self.library.calls)
        with self.assertRaisesRegex(ArgumentError, "'Q' starts at an address that is not a "
                                                   "multiple of 16 bytes"):
            attention(shifted, kv, kv, scale=0.1)
        with self.assertRaisesRegex(TypeError, "'scale' must be a Python float"):
            attention(q, kv, kv, scale="0.1")
        self.assertEqual(len(self.library.calls), calls, "a rejected call was launched")

    def test_requires_grad_and_other_shapes_run_the_checks(self):
        self.linear(self.x, self.w)
        self.w.requires_grad = True
        with self.assertRaisesRegex(ArgumentError, "'W' requires grad"):
            self.linear(self.x, self.w)
        torch.grad_enabled[0] = False  # under no_grad it is fine, and planned too
        try:
            self.linear(self.x, self.w)
            self.linear(self.x, self.w)
        finally:
            torch.grad_enabled[0] = True
            self.w.requires_grad = False
        with self.assertRaisesRegex(ArgumentError, "'W' dimension 1 \\(K\\) is 65"):
            self.linear(self.x, torch.Tensor((128, 65), torch.bfloat16))
        with self.assertRaisesRegex(ArgumentError, "'X' must be a CUDA tensor"):
            self.linear(torch.Tensor((3, 64), torch.bfloat16, index=-1), self.w)
        with self.assertRaisesRegex(TypeError, "must be torch.bfloat16"):
            self.linear(torch.Tensor((3, 64), torch.float16), self.w)

    def test_parameters_and_the_custom_op_path(self):
        weight = torch.nn.Parameter((128, 64), torch.bfloat16)
        self.linear(self.x, weight)
        self.linear(self.x, weight)
        self.assertEqual(self.last_arguments()[1], weight.data_ptr())
        y = torch.Tensor((3, 128), torch.bfloat16)
        self.linear._launch_op(self.x, self.w, y)
        self.linear._launch_op(self.x, self.w, y)
        self.assertEqual(self.last_arguments()[:3],
                         (self.x.data_ptr(), self.w.data_ptr(), y.data_ptr()))

    def test_derived_output_of_a_convolution(self):
        ops, library = kernels(("conv2d_nhwc.sketch",))
        conv = ops["conv2d_nhwc"]
        x, w, b = torch.Tensor((2, 9, 9, 64)), torch.Tensor((32, 3, 3, 64)), torch.Tensor((32,))
        outs = [conv(x, w, b), conv(x, w, b, Out=None)]
        outs += [conv(x, w, b), conv(x, w, b, Out=None)]
        self.assertEqual({out.shape for out in outs}, {(2, 9, 9, 32)})
        self.assertEqual(library.calls[-1][1][3:], (outs[-1].data_ptr(), 2, 9, 9, 64, 32, 3, 3, 77))


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        SKETCHC = sys.argv.pop(1)
    unittest.main(verbosity=1)
