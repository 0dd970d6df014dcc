"""GPU tests of the back-to-back convolutions of test/gpu/conv_b2b/conv_b2b.sketch:
a Conv2d, an epilogue, then a 1x1 Conv2d over its result in one kernel.

Every case draws fresh random inputs, fills the output with NaN, calls the
generated host function and checks every element against torch in f64: the
first convolution and its epilogue, the intermediate rounded to the operand type
(as the kernel rounds it before the second GEMM), then the second convolution
and its epilogue:  |out - ref| <= 1e-2 |ref| + 1e-2 rms(ref).
Shapes: N = 1 to 3, odd, prime and 1x1 images, C = 8 to 72 (the 16-byte im2col
path needs C % 8 == 0), ResNet-50 sizes. Bad arguments (C % 8 != 0, a window
larger than the input, null and misaligned pointers, negative sizes) return
cudaErrorInvalidValue and write nothing; N = 0 is a no-op.
"""
import math
import os

import torch
import torch.nn.functional as F

import sketch_gpu

HERE = os.path.dirname(os.path.abspath(__file__))
SKETCH = os.path.join(HERE, "conv_b2b", "conv_b2b.sketch")
TOL = 1e-2


def relu(x):
    return x.clamp(min=0)


# (epilogue of the first convolution, epilogue of the second) on f64 nhwc tensors.
EPILOGUES = {
    "cb2b_3x3_relu": (lambda y, t: relu(y + t["b0"]), lambda z, t: relu(z)),
    "cb2b_bf16_s2_residual": (lambda y, t: F.gelu(y),
                              lambda z, t: relu(z + t["b1"] + t["R"])),
    "cb2b_bf16_wgmma_residual": (lambda y, t: F.gelu(y),
                                 lambda z, t: relu(z + t["b1"] + t["R"])),
    "cb2b_wide_staged": (lambda y, t: relu(y + t["b0"]), lambda z, t: z),
    "cb2b_7x7_tiles": (lambda y, t: y, lambda z, t: z),
    "cb2b_softmax": (lambda y, t: torch.softmax(y, dim=-1), lambda z, t: z),
}

_kernels = None


def kernels():
    """{name: {params, stride, pad, dilation, w1_kcrs}} read from the sketch."""
    global _kernels
    if _kernels is None:
        _kernels = {}
        for name, params, body in sketch_gpu.sketch_kernels(SKETCH):
            first = body[body.index("Conv2d X, W0 and accumulate Y"):]
            stride, pad, dilation = sketch_gpu.conv_window(first)
            _kernels[name] = {
                "params": params,
                "stride": stride,
                "pad": pad,
                "dilation": dilation,
                "w1_kcrs": "kcrs" in body[:body.index(":\n")],
            }
    return _kernels


def sizes_for(name, n, h, w, c):
    info = kernels()[name]
    w0 = next(d for p, _, d in info["params"] if p == "W0")
    r, s = int(w0[1]), int(w0[2])
    p = sketch_gpu.conv_out_size(h, r, info["stride"][0], info["pad"][0], info["dilation"][0])
    q = sketch_gpu.conv_out_size(w, s, info["stride"][1], info["pad"][1], info["dilation"][1])
    if p < 1 or q < 1:
        return None
    return {"N": n, "H": h, "W": w, "C": c, "P": p, "Q": q}


def make_inputs(name, sizes, misalign=False):
    info = kernels()[name]
    values, tensors = {}, {}
    for pname, dtype, dims in info["params"]:
        shape = [int(d) if d.isdigit() else sizes[d] for d in dims]
        fan_in = math.prod(shape[1:]) if pname in ("W0", "W1") else 1
        x = sketch_gpu.device_tensor(shape, dtype, misalign, poison=pname == "Z",
                                     scale=math.sqrt(fan_in))
        values[pname] = x
        tensors[pname] = x
    values.update({k: v for k, v in sizes.items() if k not in ("P", "Q")})
    return values, tensors


def reference(name, tensors):
    info = kernels()[name]
    t = {k: v.double() for k, v in tensors.items() if k != "Z"}
    first, second = EPILOGUES[name]
    x = t["X"].permute(0, 3, 1, 2)
    w0 = t["W0"].permute(0, 3, 1, 2)
    y = F.conv2d(x, w0, stride=info["stride"], padding=info["pad"], dilation=info["dilation"])
    y = first(y.permute(0, 2, 3, 1), t)
    y = y.to(tensors["W1"].dtype).double()  # the kernel rounds Y to the operand type
    w1 = t["W1"].reshape(t["W1"].shape[0], -1)  # [K2, K] in krsc and kcrs alike
    return second(y @ w1.t(), t)


def check(name, n, h, w, c, misalign=False):
    sizes = sizes_for(name, n, h, w, c)
    if sizes is None:
        return None
    values, tensors = make_inputs(name, sizes, misalign)
    return sketch_gpu.call_and_check(name, values, tensors["Z"],
                                     lambda: reference(name, tensors), TOL,
                                     f"{name} N={n} H={h} W={w} C={c}")


def sweep(names, shapes):
    failures, ran = [], 0
    for name in names:
        for shape in shapes:
            try:
                ran += check(name, *shape) is not None
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "; ".join(failures[:4]) + (f" (+{len(failures) - 4} more)"
                                                     if len(failures) > 4 else "")
    assert ran, "no case fit any kernel"


# (N, H, W, C)
SMALL = [(1, 1, 1, 8), (1, 7, 9, 8), (2, 13, 11, 16), (3, 17, 5, 24), (1, 31, 29, 72),
         (2, 9, 9, 64), (1, 3, 3, 40)]
RESNET = [(2, 56, 56, 64), (2, 28, 28, 128), (3, 14, 14, 256)]


def test_small_and_odd_shapes():
    sweep(sorted(EPILOGUES), SMALL)


def test_resnet50_sizes():
    sweep(sorted(EPILOGUES), RESNET)


def test_many_row_tiles():
    """More row tiles than persistent blocks, a partial last tile (N*P*Q = 4 * 67 * 61; and
    8 * 67 * 61 with C = 64, where sm_90a runs the wgmma form: 256 tiles of 128 rows)."""
    sweep(["cb2b_3x3_relu", "cb2b_bf16_s2_residual"], [(4, 67, 61, 32)])
    sweep(["cb2b_3x3_relu", "cb2b_bf16_wgmma_residual", "cb2b_wide_staged"], [(8, 67, 61, 64)])


def test_rejects_bad_arguments():
    """C % 8 != 0, a window larger than the padded input, null and misaligned pointers, a
    negative size: cudaErrorInvalidValue and nothing written; N = 0 is a no-op."""
    invalid = sketch_gpu.CUDA_ERROR_INVALID_VALUE
    for name in sorted(EPILOGUES):
        call = sketch_gpu.kernel(name)
        values, tensors = make_inputs(name, sizes_for(name, 2, 9, 9, 16))
        assert call(**dict(values, C=12)) == invalid, f"{name}: C = 12 accepted"
        assert call(**dict(values, X=None)) == invalid, f"{name}: null X accepted"
        assert call(**dict(values, C=-1)) == invalid, f"{name}: C = -1 accepted"
        torch.cuda.synchronize()
        assert torch.isnan(tensors["Z"].float()).all(), f"{name}: a rejected call wrote"
        assert call(**dict(values, N=0)) == 0, f"{name}: N = 0 is not a no-op"
        shifted, shifted_tensors = make_inputs(name, sizes_for(name, 2, 9, 9, 16), misalign=True)
        assert call(**shifted) == invalid, f"{name}: misaligned pointers accepted"
        torch.cuda.synchronize()
        assert torch.isnan(shifted_tensors["Z"].float()).all(), f"{name}: a rejected call wrote"


def test_window_larger_than_input():
    """The 7x7 kernel on a 2x2 image (pad 3 fits it) and the 3x5 dilated one on a 1x1 image."""
    invalid = sketch_gpu.CUDA_ERROR_INVALID_VALUE
    name = "cb2b_bf16_s2_residual"  # dilation (2, 1), pad (1, 2): 5 rows needed of 1 + 2
    values, tensors = make_inputs(name, sizes_for(name, 1, 9, 9, 8))
    assert sketch_gpu.kernel(name)(**dict(values, H=2)) == invalid, "5-row window on 2+2 rows"
    torch.cuda.synchronize()
    assert torch.isnan(tensors["Z"].float()).all(), "a rejected call wrote"
    sweep(["cb2b_7x7_tiles"], [(1, 2, 2, 8)])
