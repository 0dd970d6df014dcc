"""GPU tests of the convolutions of test/gpu/conv/*.sketch (implicit GEMM: f32 nchw and
nhwc and f16/bf16 nchw on the CUDA cores, f16/bf16 nhwc on tensor cores; and
Winograd F(4x4, 3x3) and F(2x2, 3x3) for the cv_n*_wino* kernels of conv_winograd.sketch).

Each kernel's stride, pad, dilation, layouts and element types are read from
its sketch; its epilogue is in EPILOGUES. Every case draws fresh random inputs,
fills the output with NaN, calls the generated host function and compares every
element with torch's conv2d in f64 on the same (rounded) inputs:
    |out - ref| <= tol * |ref| + tol * rms(ref),  tol 1e-4 (f32 out), 1e-2 (f16/bf16 out).
nhwc/krsc tensors are permuted to nchw/kcrs for the reference (nchw activations may
take a krsc filter: conv_nchw_krsc.sketch; nhwc ones a kcrs filter: conv_nhwc_kcrs.sketch;
the output may take the other layout: conv_output_layouts.sketch). Shapes: N = 1,
C = 3, odd H and W, 1x1 / 3x3 / 5x5 / 7x7 and non-square filters, ResNet-50
layers (N = 2), sizes that take the 16-byte and the element paths, misaligned
pointers; bad arguments return cudaErrorInvalidValue without writing.
"""
import glob
import math
import os
import re

import torch
import torch.nn.functional as F

import sketch_gpu

HERE = os.path.dirname(os.path.abspath(__file__))
SKETCHES = sorted(glob.glob(os.path.join(HERE, "conv", "*.sketch")))
SCALARS = {"alpha": 0.75}
TOLERANCE = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-4}
# Winograd F(4x4, 3x3) rounds about 7x more than the direct convolution (its transforms
# scale by up to 8 and 1/24): every element within 3e-4 (|ref| and rms(ref)), and the
# normwise error under the f32 bound, 1e-4 (measured 2e-6 to 5e-6 on the H100).
F4X4_ELEMENT_TOLERANCE, F4X4_NORMWISE_TOLERANCE = 3e-4, 1e-4


def relu(x):
    return x.clamp(min=0)


def channel(t, nhwc):
    """A per-output-channel vector shaped to broadcast over the output."""
    return t if nhwc else t[:, None, None]


# Epilogue of each kernel on the f64 convolution y (in the output's layout),
# the f64 tensors t, scalars s, and whether the layout is nhwc.
EPILOGUES = {
    "cv_nchw_f16_to_nhwc_s2p3": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)) + t["Res"],
    "cv_nhwc_f32_to_nchw_s1p1_residual": lambda y, t, s, nhwc: y + channel(t["bias"], nhwc)
    + t["Res"],
    "cv_nhwc_kcrs_f16_s2p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_kcrs_bf16_s12p01d21_t64x48x32_residual": lambda y, t, s, nhwc: y + t["Res"],
    "cv_nchw_s2p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_s1p2d2_residual": lambda y, t, s, nhwc: relu(s["alpha"] * y + channel(t["bias"], nhwc)
                                                          + t["Res"]),
    "cv_nchw_pointwise_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_krsc_s2p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_krsc_f16_s1p1_residual": lambda y, t, s, nhwc: y + t["Res"],
    "cv_nchw_s1p1_t128x128x32_w8": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_s2p3_stem": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_s1p1_same": lambda y, t, s, nhwc: F.gelu(y),
    "cv_nhwc_f16_s2p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_f16_halo_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_f16_s1p1_t256x64x64": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_bf16_s2p1_t128x64x64": lambda y, t, s, nhwc: F.gelu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_f16_s1p2d2_residual": lambda y, t, s, nhwc: relu(s["alpha"] * y
                                                              + channel(t["bias"], nhwc) + t["Res"]),
    "cv_nhwc_f16_s1p1_t128x256x64_residual": lambda y, t, s, nhwc: relu(
        s["alpha"] * y + channel(t["bias"], nhwc) + t["Res"]),
    "cv_nchw_s2p1_residual_pq": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc) + t["Res"]),
    "cv_nhwc_f16_s2p1_residual_pq": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)
                                                               + t["Res"]),
    "cv_nchw_wino_s1p0_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_wino_s1p2_residual": lambda y, t, s, nhwc: relu(s["alpha"] * y
                                                             + channel(t["bias"], nhwc) + t["Res"]),
    "cv_nchw_wino_s1p1_same_residual": lambda y, t, s, nhwc: F.silu(y + t["Res"]),
    "cv_nchw_f16_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_f16_s1p0_residual": lambda y, t, s, nhwc: y + t["Res"],
    "cv_nhwc_f32_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_f32_s2p1_t64x32x8_residual": lambda y, t, s, nhwc: y + t["Res"],
    "cv_nhwc_wino_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_wino_s1p2_residual": lambda y, t, s, nhwc: relu(y + t["Res"]),
    "cv_nchw_wino2x2_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nchw_wino2x2_s1p2_residual": lambda y, t, s, nhwc: y + t["Res"],
    "cv_nhwc_wino2x2_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
    "cv_nhwc_wino_kcrs_s1p1_bias_relu": lambda y, t, s, nhwc: relu(y + channel(t["bias"], nhwc)),
}


def epilogue_of(name):
    if name in EPILOGUES:
        return EPILOGUES[name]
    if "bias" in {p for p, _, _ in kernels()[name]["params"]}:  # the tile variants: Bias only
        return lambda y, t, s, nhwc: y + channel(t["bias"], nhwc)
    return lambda y, t, s, nhwc: y


_kernels = None


def kernels():
    """{name: {params, stride, pad, dilation, nhwc}} read from the sketch files."""
    global _kernels
    if _kernels is None:
        _kernels = {}
        for path in SKETCHES:
            for name, plist, body in sketch_gpu.sketch_kernels(path):
                stride, pad, dilation = sketch_gpu.conv_window(body)
                _kernels[name] = {
                    "params": plist,
                    "stride": stride,
                    "pad": pad,
                    "dilation": dilation,
                    "nhwc": declared_layout(body, "X") == "nhwc",
                    "krsc": declared_layout(body, "Wt") == "krsc",
                    "out_nhwc": declared_layout(body, "Y", "X") == "nhwc",
                }
    return _kernels


def declared_layout(body, name, fallback=None):
    """The layout the kernel's header declares for tensor `name` (else `fallback`'s, else
    the default: nchw, kcrs)."""
    header = body[:body.index(":\n")]
    declared = re.search(r"\b" + name + r":\s*\w+\[[^\]]*\]\s*(\w+)", header)
    if declared and declared.group(1) in ("nchw", "nhwc", "kcrs", "krsc"):
        return declared.group(1)
    if fallback:
        return declared_layout(body, fallback)
    return "kcrs" if name == "Wt" else "nchw"


def sizes_for(name, shape):
    """The sizes of one case: `shape` = (N, C, H, W, K, R, S) with the sketch's literals
    and P, Q; None when the window does not fit or a literal size disagrees."""
    info = kernels()[name]
    n, c, h, w, k, r, s = shape
    sizes = {"N": n, "C": c, "H": h, "W": w, "K": k, "R": r, "S": s}
    x_dims = next(d for p, _, d in info["params"] if p == "X")
    w_dims = next(d for p, _, d in info["params"] if p == "Wt")
    letters = ("N", "H", "W", "C") if info["nhwc"] else ("N", "C", "H", "W")
    for letter, dim in zip(letters, x_dims):
        if dim.isdigit():
            sizes[letter] = int(dim)
    for letter, dim in zip(("K", "R", "S", "C") if info["krsc"] else ("K", "C", "R", "S"), w_dims):
        if dim.isdigit():
            sizes[letter] = int(dim)
    sizes["P"] = sketch_gpu.conv_out_size(sizes["H"], sizes["R"], info["stride"][0],
                                          info["pad"][0], info["dilation"][0])
    sizes["Q"] = sketch_gpu.conv_out_size(sizes["W"], sizes["S"], info["stride"][1],
                                          info["pad"][1], info["dilation"][1])
    if sizes["P"] < 1 or sizes["Q"] < 1:
        return None
    y_dims = next(d for p, _, d in info["params"] if p == "Y")
    if "H" in y_dims and (sizes["P"], sizes["Q"]) != (sizes["H"], sizes["W"]):
        return None  # a size-keeping kernel: only shapes it keeps
    return sizes


def make_inputs(name, sizes, misalign=False):
    """misalign: every tensor's base one element off 16 bytes (True) or one tensor's (its name)."""
    info = kernels()[name]
    values, tensors = {}, {}
    fan_in = sizes["C"] * sizes["R"] * sizes["S"]
    for pname, dtype, dims in info["params"]:
        if not dims:
            values[pname] = SCALARS[pname]
            continue
        shape = [int(d) if d.isdigit() else sizes[d] for d in dims]
        shifted = misalign is True or misalign == pname
        x = sketch_gpu.device_tensor(shape, dtype, shifted, poison=pname == "Y",
                                     scale=math.sqrt(max(fan_in, 1)) if pname == "Wt" else 1)
        values[pname] = x
        tensors[pname] = x
    values.update({s: v for s, v in sizes.items()})
    return values, tensors


def reference(name, tensors):
    info = kernels()[name]
    t = {n: x.double() for n, x in tensors.items() if n != "Y"}
    x, w = t["X"], t["Wt"]
    if info["nhwc"]:
        x = x.permute(0, 3, 1, 2)
    if info["krsc"]:
        w = w.permute(0, 3, 1, 2)
    y = F.conv2d(x, w, stride=info["stride"], padding=info["pad"], dilation=info["dilation"])
    if info["out_nhwc"]:
        y = y.permute(0, 2, 3, 1)
    return epilogue_of(name)(y, t, SCALARS, info["out_nhwc"])


def out_dtype(name):
    return next(d for p, d, _ in kernels()[name]["params"] if p == "Y")


def check(name, shape, misalign=False):
    sizes = sizes_for(name, shape)
    if sizes is None:
        return None
    values, tensors = make_inputs(name, sizes, misalign)
    what = f"{name} {shape}{' misaligned' if misalign is True else ''}" + (
        f" {misalign} misaligned" if isinstance(misalign, str) else "")
    if name.startswith(("cv_nchw_wino_", "cv_nhwc_wino_")):  # F(4x4, 3x3)
        norm = sketch_gpu.call_and_check(name, values, tensors["Y"],
                                         lambda: reference(name, tensors),
                                         F4X4_ELEMENT_TOLERANCE, what)
        assert norm < F4X4_NORMWISE_TOLERANCE, f"{what}: normwise error {norm:.3g}"
        return norm
    return sketch_gpu.call_and_check(
        name, values, tensors["Y"], lambda: reference(name, tensors), TOLERANCE[out_dtype(name)],
        what)


def sweep(names, shapes, misalign=False):
    failures, ran = [], 0
    for name in names:
        for shape in shapes:
            try:
                ran += check(name, shape, misalign) is not None
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "; ".join(failures[:4]) + (f" (+{len(failures) - 4} more)"
                                                     if len(failures) > 4 else "")
    assert ran, "no case fit any kernel"


NCHW = lambda: sorted(n for n in kernels() if n.startswith("cv_nchw"))  # noqa: E731
# (the nhwc kernels with a kcrs filter are mma.sync and CUDA-core ones on every architecture,
# no TMA, halo, tall or split-tail form: test_nhwc_kcrs sweeps them)
NHWC = lambda: sorted(n for n in kernels()  # noqa: E731
                      if n.startswith("cv_nhwc") and not n.startswith("cv_nhwc_kcrs"))

# (N, C, H, W, K, R, S)
SMALL = [(1, 3, 7, 9, 5, 3, 3), (2, 3, 31, 29, 17, 5, 5), (1, 8, 13, 11, 9, 1, 1),
         (3, 5, 17, 15, 70, 3, 3), (2, 16, 9, 9, 130, 1, 1), (1, 7, 10, 12, 3, 2, 4),
         (1, 1, 1, 1, 1, 1, 1)]
ALIGNED = [(2, 64, 15, 15, 72, 3, 3), (1, 32, 8, 8, 256, 3, 3), (3, 16, 33, 17, 40, 5, 5),
           (2, 24, 12, 12, 136, 1, 1)]
RESNET = [(2, 64, 56, 56, 64, 3, 3), (2, 256, 56, 56, 64, 1, 1), (2, 128, 28, 28, 128, 3, 3),
          (2, 256, 14, 14, 256, 3, 3), (2, 512, 7, 7, 512, 3, 3), (2, 128, 56, 56, 128, 3, 3)]


def test_nchw_small_and_odd_shapes():
    """N = 1, C = 3, odd H, W, 1x1 .. 5x5 and 2x4 filters, every stride/pad/dilation kernel."""
    sweep(NCHW(), SMALL + ALIGNED)


def test_nhwc_small_and_odd_shapes():
    """C % 8 != 0 takes the element path, C % 8 == 0 the 16-byte cp.async path."""
    sweep(NHWC(), SMALL + ALIGNED)


def test_nchw_krsc():
    """nchw activations with a krsc filter (the reduction in its rows' order, (r, s, c)):
    f32 and f16, strides, pads, dilations, at ResNet-50 shapes and with misaligned bases
    (test_nchw_small_and_odd_shapes sweeps them over the small and odd ones)."""
    names = sorted(n for n in kernels() if n.startswith("cv_nchw_krsc"))
    assert len(names) == 4, names
    sweep(names, RESNET[:3])
    sweep(names, ALIGNED[:2], misalign=True)


def test_nhwc_kcrs():
    """nhwc activations with a kcrs filter (gathered in the input's (r, s, c) order): f16,
    bf16 and f32, the element paths (C % 8 != 0) and the 16-byte ones, ResNet-50 shapes,
    misaligned bases (the filter's alignment does not matter: it is gathered)."""
    names = sorted(n for n in kernels() if n.startswith("cv_nhwc_kcrs"))
    assert len(names) == 4, names
    sweep(names, SMALL + ALIGNED + RESNET[:3])
    sweep(names, ALIGNED[:2], misalign=True)
    sweep(names, ALIGNED[:2], misalign="Wt")


def test_output_layouts():
    """An output layout other than the input's (nchw to nhwc, f16 and f32; f32 nhwc to
    nchw), small, odd and ResNet-50 shapes, misaligned bases."""
    names = sorted(n for n in kernels() if kernels()[n]["out_nhwc"] != kernels()[n]["nhwc"])
    assert len(names) == 3, names
    sweep(names, SMALL + ALIGNED + RESNET[:3])
    sweep(names, ALIGNED[:2], misalign=True)


def test_nchw_resnet50_layers():
    sweep(["cv_nchw_s1p1", "cv_nchw_s2p1_bias_relu", "cv_nchw_s1p1_t128x64x8",
           "cv_nchw_s1p1_t128x128x16", "cv_nchw_s1p1_t64x64x8", "cv_nchw_s2p1_t64x64x8",
           "cv_nchw_s1p0_stages1", "cv_nchw_s1p2d2_residual"], RESNET)


def test_nhwc_resnet50_layers():
    sweep(["cv_nhwc_f16_s1p1", "cv_nhwc_f16_s2p1_bias_relu", "cv_nhwc_bf16_s3p0",
           "cv_nhwc_f32_s1p1_bias_relu", "cv_nhwc_f32_s2p1_t64x32x8_residual",
           "cv_nhwc_f16_s1p1_t64x64x32", "cv_nhwc_f16_s1p1_t128x256x64",
           "cv_nhwc_f16_s1p0_stages1", "cv_nhwc_f16_s1p2d2_residual"], RESNET)


# (N, C, H, W, K, R, S) with C % 64 == 0 (and K % 8 == 0): the sm_90a kernels load X by
# TMA in im2col mode; odd and one-pixel images, several images a tile, ragged K; a
# 64-channel layer of 230 tiles (blocks of the persistent kernel take two).
TMA_SHAPES = [(1, 64, 7, 9, 72, 3, 3), (3, 128, 13, 11, 200, 3, 3), (2, 64, 17, 15, 136, 5, 5),
              (1, 192, 9, 9, 24, 1, 1), (2, 64, 1, 1, 8, 1, 1), (5, 64, 6, 10, 64, 2, 4),
              (2, 64, 56, 56, 64, 3, 3), (3, 64, 97, 101, 64, 3, 3)]


def test_nhwc_tma_im2col():
    """Every nhwc kernel (strides 1-3 and (1, 2), pads 0-3, dilations 2 and (2, 1)) where a
    k-tile is 64 channels of one tap: on sm_90a the TMA paths."""
    sweep(NHWC(), TMA_SHAPES)


def test_nhwc_tma_kernels_run():
    """On sm_90a such a convolution launches a TMA kernel, not a fallback: the persistent,
    warp-specialized one (`_ws`) where its stages and staging tile fit shared memory
    (128 x 128; 128 x 256 with 3 stages), else the one-tile kernel's TMA instantiation
    (128 x 256 whose epilogue stages the f32 accumulators)."""
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    for name, expected in [("cv_nhwc_f16_s1p1", "cv_nhwc_f16_s1p1_ws("),
                           ("cv_nhwc_f16_s1p1_t128x256x64", "cv_nhwc_f16_s1p1_t128x256x64_ws("),
                           ("cv_nhwc_f16_s1p1_t128x256x64_residual", "_residual_wg<true, true, true>")]:
        values, _ = make_inputs(name, sizes_for(name, TMA_SHAPES[1]))
        names = sketch_gpu.launched_kernels(lambda: sketch_gpu.kernel(name)(**values))
        assert names is None or any(expected in n for n in names), \
            f"{name}: no '{expected}' ran: {names}"


# (N, C, H, W, K, R, S) for the halo form (stride 1, C % 64 == 0, K <= 64: docs/backend.md
# "The halo form"): ResNet's C64 56x56, one-pixel and odd images, K under the tile (40, 8),
# several tiles an image and a last tile past P, two and three channel panels (filters
# small enough to stay in shared memory), non-square filters, output rows of 126 pixels
# (128 slots: one row a tile); Q + S - 1 = 129 slots does not fit the tile (im2col kernels).
HALO_SHAPES = [(2, 64, 56, 56, 64, 3, 3), (1, 64, 1, 1, 8, 3, 3), (2, 64, 7, 13, 40, 3, 3),
               (3, 64, 29, 62, 64, 3, 3), (2, 128, 9, 11, 64, 1, 3), (1, 192, 5, 20, 16, 2, 2),
               (2, 64, 11, 126, 64, 1, 3), (1, 64, 5, 127, 64, 3, 3), (5, 64, 30, 17, 24, 3, 5),
               (1, 64, 3, 40, 64, 5, 1)]
HALO_KERNELS = ["cv_nhwc_f16_s1p1", "cv_nhwc_f16_halo_bias_relu", "cv_nhwc_bf16_halo_p20d21"]


def halo_pays(sizes, slots, sms):
    """sketch::halo_pays (conv.cuh) for BM 128, BN 64: the halo tiles' rounds on `sms`
    multiprocessors at most 4/3 of the 128-pixel im2col tiles'."""
    channel_tiles = -(-sizes["K"] // 64)
    halo_tiles = sizes["N"] * -(-sizes["P"] // (128 // slots)) * channel_tiles
    im2col_tiles = -(-sizes["N"] * sizes["P"] * sizes["Q"] // 128) * channel_tiles
    return 3 * -(-halo_tiles // sms) <= 4 * -(-im2col_tiles // sms)


def test_nhwc_halo():
    """The halo form's kernels (f16 and bf16, f32 output, pads 0-2, dilation (2, 1), bias
    + ReLU) on HALO_SHAPES, then with the output's base misaligned (the im2col kernels);
    on sm_90a, which kernel ran is checked by name: `_halo` where it applies, not where
    the slots exceed the tile, C is not whole panels of 64, K > 64 or its tiles would take
    more rounds than halo_pays allows (7x7 at N = 256). Misaligned bases (the output's, then
    every tensor's) take the im2col kernels."""
    sweep(HALO_KERNELS, HALO_SHAPES)
    sweep(HALO_KERNELS, HALO_SHAPES[:3], misalign="Y")
    sweep(HALO_KERNELS, HALO_SHAPES[:3], misalign=True)
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name in HALO_KERNELS:
        wide = 127 if name != "cv_nhwc_bf16_halo_p20d21" else 129  # 129 slots (pad 0)
        for shape, halo in [((2, 64, 56, 56, 64, 3, 3), True), ((2, 128, 9, 11, 64, 1, 3), True),
                            ((1, 64, 5, wide, 64, 3, 3), False), ((2, 72, 9, 9, 64, 3, 3), False),
                            ((2, 64, 9, 9, 72, 3, 3), False), ((256, 64, 7, 7, 64, 3, 3), sms > 256)]:
            sizes = sizes_for(name, shape)
            slots = sizes["Q"] + (sizes["S"] - 1) * kernels()[name]["dilation"][1]
            fits = slots <= 128 and sizes["C"] % 64 == 0 and sizes["K"] <= 64
            assert halo == (fits and halo_pays(sizes, slots, sms)), shape
            values, _ = make_inputs(name, sizes)
            names = sketch_gpu.launched_kernels(lambda: sketch_gpu.kernel(name)(**values))
            ran = names is not None and any(name + "_halo(" in n for n in names)
            assert names is None or ran == halo, f"{name} {shape}: halo {halo} expected: {names}"


def tall_shapes():
    """(N, C, H, W, K, R, S) for the strided kernels' tall variant (192 x 128 tiles where they
    move fewer operand rows an SM than 128 x 128, sketch::wave_rows): one image row of
    192 SMs - 37 output pixels at stride 2 (a round of ragged 192-row tiles against two of
    128); two rows of 96 SMs with 136 output channels (a second, partial channel tile);
    ResNet's C128 56x56 layer at N = 64 (bench_conv.py's); and a short grid that keeps 128
    rows (6 tall tiles against 8, both one round). Shapes a kernel's window does not fit
    are skipped for it."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return [(1, 64, 1, 2 * (192 * sms - 37) - 1, 128, 3, 3), (1, 64, 3, 2 * (96 * sms) - 1, 136, 3, 3),
            (64, 128, 56, 56, 128, 3, 3), (2, 64, 28, 28, 256, 3, 3)]


def wave_rows(pixels, k, sms, bm, bn):
    """sketch::wave_rows: the operand rows a bm x bn tiling moves an SM."""
    tiles = -(-pixels // bm) * -(-k // bn)
    return -(-tiles // sms) * (bm + bn)


def test_nhwc_tall_tiles():
    """The strided kernels (stride 2, 3; every one with a tall variant on sm_90a) on
    tall_shapes, whole and with every base misaligned (the wide kernels' element paths); on
    sm_90a, `_ws_tall` (192 x BN) runs exactly where its tiles move fewer operand rows an SM
    than 128 x BN, for BN 128 and 64."""
    strided = [n for n in NHWC() if max(kernels()[n]["stride"]) > 1]
    sweep(strided, tall_shapes())
    sweep(strided, tall_shapes()[:1], misalign=True)
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    checked = 0
    for name, bn in (("cv_nhwc_f16_s2p1_bias_relu", 128), ("cv_nhwc_bf16_s3p0", 128),
                     ("cv_nhwc_bf16_s2p1_t128x64x64", 64)):
        for shape in tall_shapes():
            sizes = sizes_for(name, shape)
            if sizes is None:
                continue
            pixels = sizes["N"] * sizes["P"] * sizes["Q"]
            tall = wave_rows(pixels, sizes["K"], sms, 192, bn) < wave_rows(pixels, sizes["K"], sms, 128, bn)
            values, _ = make_inputs(name, sizes)
            names = sketch_gpu.launched_kernels(lambda: sketch_gpu.kernel(name)(**values))
            ran = names is not None and any(name + "_ws_tall(" in n for n in names)
            assert names is None or ran == tall, f"{name} {shape}: tall {tall} expected: {names}"
            checked += tall
    assert checked >= 2, "no shape took the tall kernel"


def tail_shapes():
    """(N, C, H, W, K, R, S) whose tile counts put a split tail on this device's SMs
    (sketch::tail_split, docs/backend.md): for a stride-1 kernel, 2 (SMs + 5) tiles of
    128 x 128 (a whole round and 10 tiles split over pairs, 9 k-tiles), 2 SMs + 3 tiles
    of 128 x 64 (two whole rounds and 3 tiles over quads, 18 k-tiles), and ResNet's C256
    14x14 layer at N = 64 (196 tiles: on 132 SMs a whole round and 64 over pairs)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return [(1, 64, 1, (sms + 5) * 128 - 37, 136, 3, 3),
            (1, 128, 1, (2 * sms + 3) * 128 - 5, 64, 3, 3),
            (64, 256, 14, 14, 256, 3, 3)]


def test_nhwc_split_tail():
    """Every nhwc kernel on shapes whose last tiles the persistent sm_90a kernel splits
    along K over clusters (the f32 reduction through distributed shared memory, then the
    whole epilogue per element); the few-tile cases of test_nhwc_tma_im2col split too."""
    sweep(NHWC(), tail_shapes())


def test_nhwc_dependent_launch_chain():
    """Back-to-back 3x3 convolutions, eager and in a CUDA graph, each reading the one
    before's output and overwriting what the one before that read: on sm_90a a persistent
    grid of one-tile blocks starts as a programmatic dependent launch (docs/backend.md).
    The results must be bitwise those with a synchronization after every call. 14 x 14
    (4 tiles: a dependent launch) and 56 x 56 (several tiles a block: a plain launch)."""
    name = "cv_nhwc_f16_s1p1"
    call = sketch_gpu.kernel(name)
    used = {p for _, p in call.params}
    failures = []
    for n, hw, c in [(2, 14, 128), (8, 56, 64)]:
        sizes = sizes_for(name, (n, c, hw, hw, c, 3, 3))
        x = torch.randn(n, hw, hw, c, device="cuda", dtype=torch.float16)
        filters = [(torch.randn(c, 3, 3, c, device="cuda") / math.sqrt(9 * c)).half()
                   for _ in range(5)]
        buffers = [torch.full_like(x, float("nan")) for _ in range(2)]

        def chain(sync):
            src = x
            for i, f in enumerate(filters):
                dst = buffers[i % 2]
                values = {"X": src, "Wt": f, "Y": dst, **sizes}
                status = call(**{p: v for p, v in values.items() if p in used})
                assert status == 0, f"step {i}: cudaError {status}"
                if sync:
                    torch.cuda.synchronize()
                src = dst
            return src

        expected = chain(True).clone()
        reference = x.permute(0, 3, 1, 2).double()
        for f in filters:
            reference = F.conv2d(reference, f.permute(0, 3, 1, 2).double(), padding=1).half().double()
        got = expected.permute(0, 3, 1, 2).double()
        error = ((got - reference).norm() / reference.norm()).item()
        if not error < 2e-2:
            failures.append(f"{n}x{hw}x{hw}x{c}: synchronized chain off torch's by {error:.2e}")
        failures += sketch_gpu.back_to_back_failures(chain, buffers, expected,
                                                     f"{n}x{hw}x{hw}x{c}")
    assert not failures, "; ".join(failures)


# (N, C, H, W, K, R, S) with C % 8 == 0 and K % 8 != 0 (a detection head's 255): the
# operands' rows are whole 16-byte chunks (TMA on sm_90a where C % 64 == 0), the output's
# are not: kernel<..., kVecStore = false> loads by 16 bytes and stores by element.
OUTPUT_CHANNELS_ODD = [(2, 64, 15, 15, 255, 3, 3), (1, 128, 13, 11, 9, 1, 1),
                       (3, 16, 9, 9, 65, 3, 3), (1, 256, 20, 20, 255, 1, 1),
                       (2, 64, 17, 15, 131, 5, 5)]


def test_nhwc_output_channels_not_whole_chunks():
    """Every nhwc kernel on output channels that are not whole 16-byte chunks, and with the
    output's base alone misaligned; on sm_90a, which instantiation ran is checked by name."""
    sweep(NHWC(), OUTPUT_CHANNELS_ODD)
    sweep(NHWC(), [(2, 64, 15, 15, 72, 3, 3), (1, 16, 9, 9, 24, 3, 3)], misalign="Y")
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    name = "cv_nhwc_f16_s1p1"
    # <kVec, kTma, kVecStore> (the profiler names all three)
    for shape, expected in [((2, 64, 15, 15, 255, 3, 3), "_wg<true, true, false>"),
                            ((3, 16, 9, 9, 201, 3, 3), "_wg<true, false, false>"),
                            ((3, 24, 9, 9, 200, 3, 3), "_wg<true, false, true>"),
                            ((3, 20, 9, 9, 201, 3, 3), "_wg<false, false, false>")]:
        values, _ = make_inputs(name, sizes_for(name, shape))
        names = sketch_gpu.launched_kernels(lambda: sketch_gpu.kernel(name)(**values))
        assert names is None or any(name + expected + "(" in n for n in names), \
            f"{name} {shape}: no '{expected}' ran: {names}"


def test_stem_224():
    """The ResNet stem: C = 3, 224 x 224, 7 x 7, stride 2, pad 3 (literal sizes in the sketch)."""
    sweep(["cv_nchw_s2p3_stem"], [(1, 3, 224, 224, 64, 7, 7), (2, 3, 225, 223, 64, 7, 7)])


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the element paths."""
    sweep(["cv_nchw_s1p1", "cv_nchw_s1p2d2_residual", "cv_nhwc_f16_s2p1_bias_relu",
           "cv_nhwc_bf16_s12p01d21"], [(2, 64, 15, 15, 72, 3, 3)], misalign=True)


# (N, C, H, W, K, 1, 1): H * W % 4 == 0 (16-byte input copies) with prime C, K and
# images of 4 pixels; H * W odd (the gather); C = 1.
POINTWISE = [(3, 13, 6, 6, 70, 1, 1), (1, 64, 28, 28, 65, 1, 1), (2, 256, 14, 14, 64, 1, 1),
             (5, 4, 1, 4, 9, 1, 1), (1, 5, 3, 3, 7, 1, 1), (2, 1, 8, 2, 3, 1, 1),
             (2, 24, 12, 12, 136, 1, 1)]


def test_pointwise_nchw():
    """1x1 stride-1 pad-0 kernels: the 16-byte input path and the gather, aligned or not."""
    names = ["cv_nchw_pointwise_bias_relu", "cv_nchw_pointwise_t64x64x8", "cv_nchw_s1p0_stages1",
             "cv_nchw_krsc_pointwise"]
    sweep(names, POINTWISE)
    sweep(names, POINTWISE[:3], misalign=True)


def test_rejects_bad_arguments():
    """A window larger than the padded input, a null pointer, a negative size:
    cudaErrorInvalidValue and nothing written; N = 0 is a no-op."""
    for name in ["cv_nchw_s2p1_bias_relu", "cv_nhwc_f16_s2p1_bias_relu", "cv_nhwc_f16_halo_bias_relu"]:
        check_rejections(name, {"R": 13}, "13x3 window on 9x9 + pad 1")


def check_rejections(name, window_too_large, what):
    """On a (2, 8, 9, 9, 16, 3, 3) case of `name`: sizes `window_too_large` (a window larger
    than the padded input: `what`), a null bias and C = -1 give cudaErrorInvalidValue and
    write nothing; N = 0 is a no-op."""
    call = sketch_gpu.kernel(name)
    values, tensors = make_inputs(name, sizes_for(name, (2, 8, 9, 9, 16, 3, 3)))
    invalid = sketch_gpu.CUDA_ERROR_INVALID_VALUE
    assert call(**dict(values, **window_too_large)) == invalid, f"{name}: {what} accepted"
    assert call(**dict(values, bias=None)) == invalid, f"{name}: null bias accepted"
    assert call(**dict(values, C=-1)) == invalid, f"{name}: C = -1 accepted"
    assert call(**dict(values, N=0)) == 0, f"{name}: N = 0 is not a no-op"
    torch.cuda.synchronize()
    assert torch.isnan(tensors["Y"].float()).all(), f"{name}: a rejected call wrote its output"


# Winograd F(4x4, 3x3) (cv_nchw_wino_*, nhwc: cv_nhwc_wino_*) and F(2x2, 3x3)
# (cv_nchw_wino2x2_*, cv_nhwc_wino2x2_*): the sketches' filters are literally 3x3 (R, S
# below are ignored).
WINOGRAD = lambda: sorted(n for n in kernels()  # noqa: E731
                          if n.startswith(("cv_nchw_wino", "cv_nhwc_wino")))
# N = 1, C = 1 or 3, odd and tiny H, W (partial 4x4 and 2x2 tiles, 1x1 images), prime C
# and K (partial channel steps and channel blocks), tile counts off the blocks' 16 and 32;
# 14x14 and 7x7 leave 2 and 3 rows and columns of the last 4x4 tiles unstored. C % 4 == 0
# takes the filters four at a time (16-byte copies); C = 12, 20 (not multiples of the step's 8)
# and 4 leave the last step's upper quads past C.
WINOGRAD_SHAPES = [(1, 3, 7, 9, 5, 3, 3), (1, 1, 1, 1, 1, 3, 3), (2, 13, 11, 8, 67, 3, 3),
                   (3, 17, 5, 6, 131, 3, 3), (1, 8, 2, 3, 64, 3, 3), (2, 37, 16, 16, 61, 3, 3),
                   (1, 64, 9, 9, 128, 3, 3), (5, 2, 3, 3, 7, 3, 3), (2, 512, 13, 17, 40, 3, 3),
                   (1, 96, 14, 6, 72, 3, 3), (2, 12, 9, 10, 19, 3, 3), (1, 4, 6, 6, 5, 3, 3),
                   (1, 20, 7, 5, 130, 3, 3)]


def test_winograd_small_and_odd_shapes():
    """Every Winograd kernel (pad 0, 1, 2, (0, 1); get and accumulate; bias + ReLU,
    residuals of [N, K, P, Q] and [N, K, H, W]) on odd, tiny and prime sizes."""
    sweep(WINOGRAD(), WINOGRAD_SHAPES)


def test_winograd_resnet50_layers():
    sweep(WINOGRAD(), [(2, 64, 56, 56, 64, 3, 3), (2, 128, 28, 28, 128, 3, 3),
                       (2, 256, 14, 14, 256, 3, 3), (2, 512, 7, 7, 512, 3, 3)])


def test_winograd_misaligned_base_pointers():
    sweep(["cv_nchw_wino_s1p1", "cv_nchw_wino_s1p2_residual", "cv_nhwc_wino_s1p1_bias_relu",
           "cv_nhwc_wino2x2_s1p1_bias_relu", "cv_nhwc_wino_kcrs_s1p1_bias_relu",
           "cv_nchw_wino2x2_krsc_s1p0"], [(2, 64, 15, 15, 72, 3, 3)], misalign=True)


def test_winograd_rejects_bad_arguments():
    """The implicit GEMM's checks: a window larger than the input, a null pointer, a
    negative size give cudaErrorInvalidValue and write nothing; N = 0 is a no-op."""
    check_rejections("cv_nchw_wino_s1p0_bias_relu", {"H": 2}, "3x3 window on 2 rows, pad 0")
