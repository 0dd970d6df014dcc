#!/usr/bin/env python3
"""The sketch package's argument checks without a GPU or torch (run by ctest).

Reads the host API that `sketchc --emit=api` writes for the bundled examples
and checks the package's binding of arguments, the size symbols read off
shapes, derived convolution sizes, the host functions' conditions and the
expression evaluator. Tensors are stand-ins with a `.shape`.
    python3 python/tests/test_api.py path/to/sketchc
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from sketch._api import ArgumentError, evaluate, read_api  # noqa: E402

SKETCHC = os.path.join(ROOT, "build", "compiler", "sketchc")


def api(example, *options):
    out = subprocess.run([SKETCHC, os.path.join(ROOT, "examples", example), "--emit=api",
                          *options], capture_output=True, text=True, check=True).stdout
    return {sig.name: sig for sig in read_api(json.loads(out))}


class Shape:
    def __init__(self, *shape):
        self.shape = shape


class EvaluateTest(unittest.TestCase):
    def test_c_arithmetic(self):
        self.assertEqual(evaluate("H - R + 3", {"H": 10, "R": 3}), 10)
        self.assertEqual(evaluate("(H + 2 - R) / 2 + 1", {"H": 9, "R": 3}), 5)
        self.assertEqual(evaluate("(0 - 3) / 2", {}), -1)   # toward zero, as in C
        self.assertEqual(evaluate("-7 % 3", {}), -1)
        self.assertTrue(evaluate("HK > 0 && H % HK == 0", {"H": 8, "HK": 2}))
        self.assertFalse(evaluate("HK > 0 && H % HK == 0", {"H": 8, "HK": 0}))  # short-circuit
        self.assertFalse(evaluate("H % HK == 0", {"H": 9, "HK": 2}))

    def test_rejects_what_is_not_arithmetic(self):
        for text in ["__import__('os')", "H.real", "[H]", "H ** 2", "'a'"]:
            with self.assertRaises((ValueError, KeyError, SyntaxError)):
                evaluate(text, {"H": 2})
        with self.assertRaises(KeyError):
            evaluate("H + X", {"H": 1})
        with self.assertRaises(ValueError):
            evaluate("H / X", {"H": 1, "X": 0})


class GemmTest(unittest.TestCase):
    def setUp(self):
        self.sig = api("gemm_bias_relu.sketch")["gemm_bias_relu"]

    def test_description(self):
        self.assertEqual([p.name for p in self.sig.params], ["A", "B", "bias", "D"])
        self.assertEqual(self.sig.size_symbols, ["M", "K", "N"])
        self.assertEqual([p.access for p in self.sig.params], ["read", "read", "read", "write"])
        self.assertTrue(self.sig.params[3].output_only)

    def test_bind(self):
        bound = self.sig.bind((1, 2), {"bias": 3})
        self.assertEqual(bound, {"A": 1, "B": 2, "bias": 3, "D": None})
        for args, kwargs, words in [((1, 2, 3, 4, 5), {}, "takes 4 arguments"),
                                    ((1, 2), {}, "missing 'bias'"),
                                    ((1, 2, 3), {"E": 1}, "unexpected argument 'E'"),
                                    ((1, 2, 3), {"A": 1}, "both by position and by name"),
                                    ((None, 2, 3), {}, "missing 'A'")]:
            with self.assertRaisesRegex(TypeError, words):
                self.sig.bind(args, kwargs)

    def test_sizes(self):
        values = self.sig.sizes({"A": (64, 32), "B": (32, 48), "bias": (48,)})
        self.assertEqual((values["M"], values["K"], values["N"]), (64, 32, 48))
        self.assertEqual(self.sig.output_shape(self.sig.params[3], values), (64, 48))
        with self.assertRaisesRegex(ArgumentError, r"'B' dimension 0 \(K\) is 16, but K is 32 "
                                                   r"\(as 'A' dimension 1 says\)"):
            self.sig.sizes({"A": (64, 32), "B": (16, 48), "bias": (48,)})
        with self.assertRaisesRegex(ArgumentError, "'A' must have 2 dimensions"):
            self.sig.sizes({"A": (64,), "B": (32, 48), "bias": (48,)})


class AttentionTest(unittest.TestCase):
    def test_conditions_and_alignment(self):
        sig = api("attention_gqa.sketch")["attention_gqa"]
        self.assertTrue(all(p.alignment == 16 for p in sig.tensors))
        shapes = {"Q": (1, 8, 16, 128), "K": (1, 2, 16, 128), "V": (1, 2, 16, 128)}
        sig.check_requirements(sig.sizes(shapes))
        with self.assertRaisesRegex(ArgumentError, "key/value heads must divide the query heads"):
            sig.check_requirements(sig.sizes(dict(shapes, Q=(1, 7, 16, 128))))
        no_keys = {"Q": (1, 8, 16, 128), "K": (1, 2, 0, 128), "V": (1, 2, 0, 128)}
        with self.assertRaisesRegex(ArgumentError, "softmax over no keys"):
            sig.check_requirements(sig.sizes(no_keys))
        with self.assertRaisesRegex(ArgumentError, "'Q' dimension 3 must be 128, got 64"):
            sig.sizes(dict(shapes, Q=(1, 8, 16, 64)))


class ConvTest(unittest.TestCase):
    def setUp(self):
        self.sig = api("conv2d_nhwc.sketch")["conv2d_nhwc"]

    def test_derived_output(self):
        self.assertIn("P", self.sig.derived)
        self.assertNotIn("P", self.sig.size_symbols)
        values = self.sig.sizes({"In": (2, 13, 11, 24), "Wei": (40, 3, 3, 24), "bias": (40,)})
        self.assertEqual((values["P"], values["Q"]), (13, 11))  # stride 1, pad 1
        out = self.sig.params[3]
        self.assertEqual(self.sig.output_shape(out, values), (2, 13, 11, 40))
        with self.assertRaisesRegex(ArgumentError, r"'Out' dimension 1 \(P\) must be P = .* = 13"):
            self.sig.sizes({"In": (2, 13, 11, 24), "Wei": (40, 3, 3, 24), "bias": (40,),
                            "Out": (2, 12, 11, 40)})
        with self.assertRaisesRegex(ArgumentError, "the window does not fit"):
            self.sig.sizes({"In": (1, 1, 1, 24), "Wei": (40, 5, 5, 24), "bias": (40,)})


class BoundTest(unittest.TestCase):
    def test_bound_symbol(self):
        sig = api("gemm_bias_relu.sketch", "-D", "K=64")["gemm_bias_relu"]
        self.assertEqual(sig.size_symbols, ["M", "N"])  # -D K=64 makes K a literal
        self.assertEqual(sig.params[0].dims, ["M", "64"])
        with self.assertRaisesRegex(ArgumentError, "'A' dimension 1 must be 64, got 32"):
            sig.sizes({"A": (8, 32), "B": (32, 8), "bias": (8,)})


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        SKETCHC = sys.argv.pop(1)
    unittest.main(verbosity=1)
