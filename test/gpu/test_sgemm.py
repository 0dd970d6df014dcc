"""GPU tests of the f32 GEMM kernels of test/gpu/sgemm/*.sketch (on sm_90a most of them
multiply on the f64 tensor cores, sketch/dmma.cuh; the others and sm_80 on the CUDA cores).

Each kernel is checked on random inputs with a NaN-poisoned output against an
f64 reference of its epilogue (gemm_cases.py: rtol 1e-4, f16 outputs 1e-2).
Sizes: 1x1x1, 127x257x65, primes, odd and partial tiles, 4000x3000x2000 and
4096^3; K = 0 and 1; misaligned base pointers (the scalar path); one operand's rows
16-byte chunks and the other's not (each operand's copies chosen apart); bad arguments
return cudaErrorInvalidValue without writing. The test_rule_tiles_* tests run
the tiles by rule of sgemm_rule_tiles.sketch alone:
    SKETCH_FILES=sgemm_rule_tiles test/gpu/run.sh -k test_sgemm::test_rule_tiles
"""
import re

import sketch_gpu
import torch
import torch.nn.functional as F

from gemm_cases import GemmCases, expr, leaky, relu

# The epilogue of each kernel, by the name after its second '_', on the f64
# product `acc`, the f64 tensors t and the scalars s (gemm_cases.py).
EPILOGUES = {
    "plain": lambda acc, t, s: acc,
    "bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "fullbias_silu": lambda acc, t, s: F.silu(acc + t["bias"]),
    "alpha_beta": lambda acc, t, s: s["alpha"] * acc + s["beta"] * t["C"],
    "sigmoid": lambda acc, t, s: torch.sigmoid(acc),
    "leaky": lambda acc, t, s: leaky(acc, s["slope"]),
    "scale_tanh": lambda acc, t, s: torch.tanh(s["alpha"] * acc),
    "add_beta": lambda acc, t, s: acc + s["beta"] * t["C"],
    "expr": expr,
    "bt": lambda acc, t, s: acc + t["bias"],
    "at": lambda acc, t, s: acc,
    "atbt": lambda acc, t, s: acc,
    "batched": lambda acc, t, s: relu(acc + t["bias"]),
    "batched_bcast": lambda acc, t, s: acc + t["C"],
    "f16out": lambda acc, t, s: acc + t["bias"],
    "t128x128x16": lambda acc, t, s: acc + t["bias"],
    "t64x128x8": lambda acc, t, s: acc + t["bias"],
    "t128x64x8": lambda acc, t, s: acc + t["bias"],
    "t64x64x8_atbt": lambda acc, t, s: acc + t["bias"],
    "t64x64x8": lambda acc, t, s: acc + t["bias"],
    "stages1": lambda acc, t, s: acc + t["bias"],
    # sgemm_rule_tiles.sketch: bias per column, per row ("rowbias"), ReLU ("relu")
    **{suffix: lambda acc, t, s: acc + t["bias"] for suffix in (
        "r64x64x16", "r64x64x16_w8", "r32x32x8", "r16x16x8", "r256x64x8_w4",
        "r256x64x32_atbt", "r96x96x32_w6", "r32x96x12", "r24x40x4", "r48x80x8_w2",
        "r128x32x8_w8_s1", "r64x256x32_s1")},
    "r256x64x32": lambda acc, t, s: relu(acc + t["bias"]),
    # sgemm_split.sketch
    "split3": lambda acc, t, s: relu(acc + t["bias"]),
    "split8bt": lambda acc, t, s: acc + t["bias"],
    "splitauto_t64x64x8_at": lambda acc, t, s: acc,
    "split2_s1": lambda acc, t, s: acc + t["bias"],
    "r96x96x32": lambda acc, t, s: acc + t["bias"][:, None],
    "r24x40x4_atbt": lambda acc, t, s: acc + t["bias"][:, None],
}

CASES = GemmCases("sgemm", EPILOGUES)


def test_every_kernel_small_sizes():
    """1x1x1; odd sizes (the scalar path); multiples of 4 with partial tiles (the 16-byte path)."""
    CASES.sweep(sorted(CASES.kernels()),
                [(1, 1, 1), (127, 257, 65), (33, 5, 7), (64, 72, 40), (130, 136, 200)])


def test_every_kernel_multi_tile():
    """Several tiles in both directions and many k-tiles."""
    CASES.sweep(sorted(CASES.kernels()), [(300, 520, 520), (513, 263, 1031)])


def test_k_zero_and_one():
    """K = 0 (the epilogue of zero) and K = 1 (one partial k-tile)."""
    CASES.sweep(["sg_f32_bias_relu", "sg_f32_alpha_beta", "sg_f32_bt", "sg_f32_at",
                 "sg_f32_stages1"], [(33, 40, 0), (33, 40, 1)])


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the host function picks the scalar path."""
    CASES.sweep(["sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at", "sg_f32_batched", "sg_f32_f16out",
                 "sg_f32_t128x128x16"], [(136, 264, 72)], misalign=True)


def test_one_operand_aligned():
    """One operand's rows whole 16-byte chunks, the other's not (K, M or N odd, or one base off
    16 bytes): the host takes each operand's copies apart (kVecA for A, kVec for B and D)."""
    CASES.sweep(sorted(CASES.kernels()),
                [(130, 136, 201), (129, 136, 200), (130, 137, 200), (300, 520, 517)])
    for tensor in ("A", "B"):
        CASES.sweep(["sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at", "sg_f32_atbt", "sg_f32_batched",
                     "sg_f32_t64x64x8"], [(136, 264, 72)], misalign=tensor)


def check_plain_instances(cases, name="sg_f32_plain", misalign=False):
    """On sm_90a: kernel `name` at each M x N x K of `cases` (`misalign`: that tensor's base
    off 16 bytes) launches a kernel whose name contains the expected instance (when the
    profiler can tell)."""
    if torch.cuda.get_device_capability()[0] != 9 or sketch_gpu.generated_arch() != "sm_90a":
        return
    for (m, n, k), expected in cases:
        values, _ = CASES.make_inputs(name, {"M": m, "N": n, "K": k}, misalign=misalign)
        ran = sketch_gpu.launched_kernels(lambda: sketch_gpu.kernel(name)(**values))
        assert ran is None or any(expected in r for r in ran), f"{m}x{n}x{k}: {ran}"


def test_one_operand_aligned_instance_by_name():
    """K odd runs <true, false, ...> (B's copies and the stores 16-byte, A's by element), N odd
    <false, true, ...> (the default tile's kernel, split-K form, one slice on these grids)."""
    check_plain_instances([((2048, 2048, 517), "sg_f32_plain_simt<true, false, false>"),
                           ((2048, 2047, 520), "sg_f32_plain_simt<false, true, false>"),
                           ((2048, 2048, 520), "sg_f32_plain_simt<true, true, false>")])


def test_transposed_b_copies_async():
    """A [M, K] and B^T [N, K]: B's copies are always 4-byte cp.async, so K odd or B's base off
    16 bytes leaves the stores 16-byte (kVec); N odd does not."""
    check_plain_instances([((2048, 2048, 517), "sg_f32_bt_simt<true, false, false>"),
                           ((2048, 2047, 520), "sg_f32_bt_simt<false, true, false>")], "sg_f32_bt")
    check_plain_instances([((2048, 2048, 520), "sg_f32_bt_simt<true, true, false>")], "sg_f32_bt",
                          misalign="B")


def test_pipelined_scalar_instance():
    """A's rows not whole 16-byte chunks (K odd, or A's base off 16 bytes): every copy is a
    cp.async, and the kernels of 16 or more deep run 3 stages (mainloop_pipelined): 1, 2, 3, 4
    and many k tiles (the first refills, the stage ring's wrap, a last tile in part)."""
    kernels = ["sg_f32_plain", "sg_f32_bias_relu", "sg_f32_bt", "sg_f32_t128x128x16",
               "sg_f32_batched", "sg_f32_expr"]
    CASES.sweep(kernels, [(70, 72, 15), (70, 72, 17), (70, 72, 33), (70, 72, 49), (257, 263, 1001)])
    CASES.sweep(kernels, [(136, 264, 48), (136, 264, 72)], misalign="A")


# The default kernels with A [M, K] on large grids. On sm_80 (CUDA cores) a tile given the
# defaults' sizes has a 256 x 128 tile beside it for sizes whose A rows are not whole 16-byte
# chunks (sketch::full_rounds; docs/backend.md "f32 large-grid tile"); on sm_90a the default
# tile (64 x 64 on the f64 tensor cores) runs every grid itself.
LARGE_GRID_DEFAULTS = ["sg_f32_plain", "sg_f32_bias_relu", "sg_f32_rowbias_gelu",
                       "sg_f32_fullbias_silu", "sg_f32_bt", "sg_f32_expr", "sg_f32_batched",
                       "sg_f32_f16out"]


def test_large_grid_tile():
    """K odd or A's base off 16 bytes on large grids (2.9 and 3.9 rounds of an H200's 132 SMs
    in 256 x 128 tiles): partial row and column tiles, a last partial k tile; on sm_90a the
    default tile's own kernel ran, where the profiler can tell."""
    CASES.sweep(LARGE_GRID_DEFAULTS, [(4000, 3001, 2001), (4095, 4093, 517)])
    CASES.sweep(LARGE_GRID_DEFAULTS, [(4000, 3000, 2000)], misalign="A")
    check_plain_instances([((4000, 3001, 2001), "sg_f32_plain_simt<false, false, false>"),
                           ((4000, 3000, 2001), "sg_f32_plain_simt<true, false, false>"),
                           ((4000, 3000, 2000), "sg_f32_plain_simt<true, true, false>")])


def test_f64_tensor_cores_round_once():
    """On sm_90a the default tile multiplies on the f64 tensor cores: exact products, f64 sums,
    one rounding to f32, so every element is within an f32 rounding of the f64 product (FFMA
    sums in f32 are off by about 1e-6 of the largest element at K = 4096, bench/labs/sgemm_dmma),
    here at most 1.5e-7 of the largest |D| (2^-23 = 1.2e-7)."""
    if torch.cuda.get_device_capability()[0] != 9 or sketch_gpu.generated_arch() != "sm_90a":
        return
    for m, n, k in [(1000, 1003, 4096), (257, 130, 8191)]:
        values, tensors = CASES.make_inputs("sg_f32_plain", {"M": m, "N": n, "K": k})
        assert sketch_gpu.kernel("sg_f32_plain")(**values) == 0
        torch.cuda.synchronize()
        exact = tensors["A"].double() @ tensors["B"].double()
        error = (tensors["D"].double() - exact).abs().max() / exact.abs().max()
        assert error < 1.5e-7, f"{m}x{n}x{k}: {error:.2e}"


def test_large_4000x3000x2000():
    CASES.sweep(["sg_f32_plain", "sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at",
                 "sg_f32_t128x128x16", "sg_f32_t64x128x8", "sg_f32_expr"], [(4000, 3000, 2000)])


def test_large_4096():
    CASES.sweep(["sg_f32_plain", "sg_f32_t128x128x16", "sg_f32_atbt"], [(4096, 4096, 4096)])


def test_rejects_bad_arguments():
    """Null pointers and negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
    CASES.check_rejects_bad_arguments("sg_f32_bias_relu")


def rule_tiles():
    """The kernels of sgemm_rule_tiles.sketch: tiles by rule, micro-tiles other than 8 x 8."""
    return sorted(name for name in CASES.kernels() if re.match(r"sg_f32_r\d", name))


def test_rule_tiles_ragged_sizes():
    """1x1x1, primes and odd sizes (the scalar path), multiples of 4 with partial tiles (vector)."""
    CASES.sweep(rule_tiles(), [(1, 1, 1), (2, 3, 5), (97, 101, 103), (127, 257, 65), (33, 5, 7),
                               (211, 307, 401), (132, 136, 200), (244, 292, 404)])


def test_rule_tiles_k_zero_and_one():
    """K = 0 (the epilogue of zero) and K = 1 (one partial k-tile)."""
    CASES.sweep(rule_tiles(), [(33, 40, 0), (33, 40, 1), (97, 101, 1)])


def test_rule_tiles_misaligned_base_pointers():
    """Bases one element off 16 bytes: the host function picks the scalar path."""
    CASES.sweep(rule_tiles(), [(136, 264, 72)], misalign=True)


def test_rule_tiles_large_4000x3000x2000():
    CASES.sweep(rule_tiles(), [(4000, 3000, 2000)])


# split_k (sm_90: K over a cluster's blocks). The default kernels take `split_k auto`, which
# splits where the grid is under 3/4 of the resident blocks; sgemm_split.sketch fixes the count.
SPLIT_DEFAULTS = ["sg_f32_plain", "sg_f32_bias_relu", "sg_f32_bt", "sg_f32_at", "sg_f32_atbt",
                  "sg_f32_expr", "sg_f32_batched", "sg_f32_f16out"]


def split_kernels():
    return sorted(name for name in CASES.kernels() if name.startswith("sg_f32_split"))


def test_split_k_small_grids():
    """Grids of few tiles over a long K (the host splits: 4096 x 10 x 4096 is 32 tiles), odd K
    (the scalar path), K of fewer k tiles than slices, M = N = 1; every element."""
    CASES.sweep(SPLIT_DEFAULTS + split_kernels(),
                [(4096, 10, 4096), (777, 1003, 515), (1, 1, 5000), (129, 7, 4099), (64, 64, 64),
                 (3, 300, 2001), (260, 132, 40), (5, 3, 17)])


def test_split_k_zero_and_one_and_misaligned():
    """K = 0 and 1 under a fixed slice count (empty slices), bases off 16 bytes."""
    CASES.sweep(split_kernels(), [(33, 40, 0), (33, 40, 1), (97, 101, 3)])
    CASES.sweep(SPLIT_DEFAULTS + split_kernels(), [(136, 24, 1000)], misalign=True)


def test_split_k_same_bits():
    """Two runs of a split kernel give the same bits (the slices add in rank order)."""
    for name, (m, n, k) in [("sg_f32_bias_relu", (777, 1003, 515)), ("sg_f32_split3", (61, 130, 999)),
                            ("sg_f32_split8bt", (200, 70, 3001))]:
        values, tensors = CASES.make_inputs(name, {"M": m, "N": n, "K": k})
        runs = []
        for _ in range(2):
            tensors["D"].fill_(float("nan"))
            assert sketch_gpu.kernel(name)(**values) == 0
            torch.cuda.synchronize()
            runs.append(tensors["D"].clone())
        assert torch.equal(runs[0].view(torch.int32), runs[1].view(torch.int32)), name


def test_split_k_instantiation_by_name():
    """The default tile (64 x 64 on sm_90a) splits itself: <vec, vec_a, true> (in clusters) on
    small grids, <vec, vec_a, false> on grids that fill the GPU."""
    check_plain_instances([((4096, 12, 4096), "sg_f32_plain_simt<true, true, true>"),
                           ((4096, 10, 4096), "sg_f32_plain_simt<false, true, true>"),
                           ((4096, 4096, 256), "sg_f32_plain_simt<true, true, false>")])
