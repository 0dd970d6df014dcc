"""GPU tests of the tensor-core GEMM kernels of test/gpu/gemm/*.sketch.

Each kernel is checked on random inputs with a NaN-poisoned output against an
f64 reference of its epilogue (gemm_cases.py: rtol 1e-2 for f16/bf16 outputs,
1e-4 for f32). Sizes: 1x1x1, 127x257x65, unaligned and aligned partial tiles,
4000x3000x2000 and 4096x4096x4096; K = 0 and 1; misaligned base pointers take
the element path; bad arguments return cudaErrorInvalidValue without writing.
"""
import torch
import torch.nn.functional as F

import sketch_gpu
from gemm_cases import TOLERANCE, GemmCases, expr, leaky, relu, sm90a_with_132_sms

# The epilogue of each kernel, by the name after its second '_', on the f64
# product `acc`, the f64 tensors t and the scalars s (gemm_cases.py).
EPILOGUES = {
    "plain": lambda acc, t, s: acc,
    "bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "fullbias_silu": lambda acc, t, s: F.silu(acc + t["bias"]),
    "alpha_beta": lambda acc, t, s: s["alpha"] * acc + s["beta"] * t["C"],
    "sigmoid": lambda acc, t, s: torch.sigmoid(acc),
    "tanh": lambda acc, t, s: torch.tanh(acc),
    "leaky": lambda acc, t, s: leaky(acc, s["slope"]),
    "expr": expr,
    "bt": lambda acc, t, s: acc + t["bias"],
    "batched": lambda acc, t, s: relu(acc + t["bias"]),
    "f32out": lambda acc, t, s: acc + t["bias"],
    "batched_bcast": lambda acc, t, s: acc + t["C"],
    "batched_coladd": lambda acc, t, s: relu(acc + s["beta"] * t["C"]),
    "rowbias_relu": lambda acc, t, s: relu(acc + t["bias"][:, None]),
    "f32bias_f32out": lambda acc, t, s: acc + t["bias"],
    "f32rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "f32sigmoid": lambda acc, t, s: torch.sigmoid(acc),
    "exprbias": lambda acc, t, s: relu(t["bias"] + acc) * 0.5,
    "residual": lambda acc, t, s: relu(acc + t["bias"] + t["R"]),
    "batched2d_tt": lambda acc, t, s: acc,
    "128x256": lambda acc, t, s: relu(acc + t["bias"]),
    "unitbcast": lambda acc, t, s: relu(acc + t["bias"]) * t["R"],
    "mma_exp_tanh": lambda acc, t, s: torch.exp(-acc * acc) * torch.tanh(acc),
    "mma_rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "silu_mul": lambda acc, t, s: F.silu(acc) * t["C"],
    "sigmoid_tanh_mul": lambda acc, t, s: torch.sigmoid(acc) * torch.tanh(acc) * t["C"],
    "bt_f32out": lambda acc, t, s: acc + t["bias"],
    "mma_bt": lambda acc, t, s: acc,
    "mma_f32_gelu_silu": lambda acc, t, s: F.gelu(acc + t["bias"]) + F.silu(acc + t["bias"]),
}

CASES = GemmCases("gemm", EPILOGUES, default="plain")

BIG = ["tc_f16_plain", "tc_bf16_plain", "tc_f16_bias_relu", "tc_bf16_128x256", "tc_f16_256x128",
       "tc_f16_bt", "tc_f16_stages4", "tc_f16_alpha_beta",
       # sm_90a: persistent, warp-specialized (more tiles than blocks: the tile loop runs)
       "tc_f16ws_batched", "tc_bf16_128x256x64",
       # sm_90a persistent kernels whose accumulators start from the epilogue's operand
       "tc_f16_batched_coladd", "tc_f16_rowbias_relu", "tc_f16_f32bias_f32out", "tc_f16_exprbias",
       "tc_f16_residual",
       # an f32 output with a function: its statements on the staged accumulators
       "tc_f16_f32rowbias_gelu",
       # mma.sync (256-row tiles) with functions applied in place before staging, and an f32
       # output with two functions (its accumulators staged first)
       "tc_f16_mma_exp_tanh", "tc_bf16_mma_rowbias_gelu", "tc_f16_mma_f32_gelu_silu",
       # a whole operand with one function (its words preloaded) and with two (staged)
       "tc_bf16_silu_mul", "tc_f16_sigmoid_tanh_mul",
       # sm_90a: 192-row tiles, three consumer warpgroups (gemm_tiles_4.sketch)
       "tc_f16w192_bias_relu", "tc_f16w192_bt"]


def test_every_kernel_small_sizes():
    """1x1x1; odd sizes (the element path); aligned sizes with partial tiles (the 16-byte path)."""
    CASES.sweep(sorted(CASES.kernels()), [(1, 1, 1), (127, 257, 65), (64, 72, 40), (130, 136, 200)])


def test_every_kernel_multi_tile():
    """Several tiles in both directions and many k-tiles (every pipeline stage reused)."""
    CASES.sweep(sorted(CASES.kernels()), [(300, 520, 520), (513, 263, 1031)])


def test_mma_functions_in_place():
    """The mma.sync kernel's epilogues with functions over 128 accumulators a thread, run in
    place before staging (an f32 output with two functions: on the staged accumulators):
    ragged, multi-tile and K = 0 / 1 sizes (also in the sweeps above)."""
    CASES.sweep(["tc_f16_mma_exp_tanh", "tc_bf16_mma_rowbias_gelu", "tc_f16_mma_f32_gelu_silu"],
                [(1, 1, 1), (255, 129, 33), (257, 131, 520), (513, 263, 1031), (33, 40, 0),
                 (2000, 1000, 300)])


def test_k_zero_and_one():
    """K = 0 (the epilogue of zero) and K = 1 (one partial k-tile)."""
    CASES.sweep(["tc_f16_bias_relu", "tc_bf16_alpha_beta", "tc_f16_bt", "tc_f16_at"],
                [(33, 40, 0), (33, 40, 1)])


def test_output_rows_not_whole_chunks():
    """N not a multiple of 8 with K one (a vocabulary of 50257): kernels whose operands' rows
    run along K load by 16 bytes (TMA on sm_90a) and store by element (kernel<true, false>);
    the others take the element path. Also the output's base alone misaligned."""
    CASES.sweep(sorted(CASES.kernels()), [(136, 131, 64), (300, 517, 520), (129, 1001, 200)])
    CASES.sweep(BIG, [(4000, 3001, 2000)])
    CASES.sweep(["tc_bf16_bt_f32out", "tc_f16_mma_bt"], [(4000, 3001, 2000), (257, 130, 64)])
    CASES.sweep(["tc_f16_bt", "tc_bf16_bt", "tc_f16_bias_relu", "tc_f16ws_batched",
                 "tc_bf16_bt_f32out", "tc_f16_mma_bt"],
                [(136, 264, 72), (300, 517, 520)], misalign="D")


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the host function picks the element path."""
    CASES.sweep(["tc_f16_bias_relu", "tc_bf16_bt", "tc_f16_f32out", "tc_f16_batched",
                 "tc_bf16_batched2d_tt", "tc_bf16_f32sigmoid"], [(136, 264, 72)], misalign=True)


def test_element_path_word_loads():
    """Odd K (rows 2-byte aligned, every other row 4-byte aligned): the element path loads
    aligned words and shifts them, with element loads where a word would leave the matrix
    (the first chunk of a base one element off, the last chunk of each row); with aligned and
    misaligned bases, one row and several, every operand order."""
    names = ["tc_f16_bias_relu", "tc_bf16_bt", "tc_f16_at", "tc_f16_batched", "tc_f16_mma_bt",
             "tc_bf16_batched2d_tt", "tc_f16_residual"]
    shapes = [(67, 131, 1031), (1, 9, 4097), (130, 1, 515), (3, 5, 7)]
    CASES.sweep(names, shapes)
    CASES.sweep(names, shapes, misalign=True)


def test_accumulator_start_operand_alone_misaligned():
    """The persistent kernel starts its accumulators from the epilogue's operands
    (docs/backend.md): with A, B and D aligned (the 16-byte path) but one operand one
    element off 4 bytes, its word loads give way to element loads; odd N leaves the last
    column pair half outside."""
    shifted_operands = {"tc_f16_bias_relu": ["bias"], "tc_f16_batched_coladd": ["C"],
                        "tc_f16_exprbias": ["bias"], "tc_f16_residual": ["bias", "R"]}
    for name, operands in shifted_operands.items():
        for operand in operands:
            for m, n, k in ((136, 264, 72), (300, 520, 520), (77, 263, 40)):
                sizes = {"M": m, "N": n, "K": k, **CASES.batch_sizes(name)}
                values, tensors = CASES.make_inputs(name, sizes)
                dtype = next(d for p, d, _ in CASES.kernels()[name][0] if p == operand)
                shifted = sketch_gpu.device_tensor(list(tensors[operand].shape), dtype, misalign=True)
                values[operand] = tensors[operand] = shifted
                sketch_gpu.call_and_check(name, values, tensors["D"],
                                          lambda: CASES.reference(name, tensors), TOLERANCE["f16"],
                                          f"{name} {m}x{n}x{k} {operand} misaligned")


def test_short_operands_tma():
    """Aligned sizes (the TMA path) where M or N is shorter than the tile, or its last tile
    overhangs the matrix: those boxes stop at the rows left rounded up to 8 (the tail maps,
    sketch::tma_box_rows); the tile's other rows in a stage are stale and must reach no
    stored element. Also with more tiles than SMs (the persistent loop over short tiles)."""
    shapes = [(m, 264, 200) for m in (1, 5, 8, 9, 24, 33, 63)]
    shapes += [(300, n, 136) for n in (8, 40, 120)]
    # the last tile along M or N overhangs the matrix: its boxes come from the tail map
    shapes += [(136, 392, 200), (200, 264, 72), (72, 136, 520)]
    CASES.sweep(sorted(CASES.kernels()), shapes)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    CASES.sweep(["tc_f16_plain", "tc_f16_bias_relu", "tc_f16ws_batched", "tc_f16_rowbias_relu",
                 "tc_bf16_128x256x64"], [(5, 256 * (sms + 8), 72)])


def test_expr_variant_128x128():
    """The expr kernels (four calls beside C's words, a column bias and two scalars) at
    sizes whose small grid takes the one-slice 128 x 128 variant, where
    functionsCrowdPreloads keeps the epilogue staged in f32 (preloaded, the element path
    spilled): the 16-byte and element paths, every element checked. On sm_90a with 132 SMs
    (the host's rule picks by the SM count), the variant is what ran."""
    names, shapes = ["tc_f16_expr", "tc_bf16_expr"], [(1024, 2048, 200), (1021, 2047, 201)]
    CASES.sweep(names, shapes)
    if not sm90a_with_132_sms():
        return
    for name in names:
        for m, n, k in shapes:
            CASES.assert_ran(name, m, n, k, "_128x128_kernel<")


def test_persistent_store_slots():
    """More tiles than SMs and one k-tile, so that each block of a persistent kernel stores
    several tiles and the warpgroups' TMA-store slots are reused across tiles: two slots
    (tc_f16_plain, 128 x 256), an odd box count (tc_f16w192_plain), one slot
    (tc_f16_64x64) and an f32 output (tc_f16_f32bias_f32out). Small enough for
    compute-sanitizer racecheck (test/gpu/sanitize.sh's subset)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    CASES.sweep(["tc_f16_plain", "tc_f16w192_plain", "tc_f16_64x64", "tc_f16_f32bias_f32out"],
                [(256, 256 * (sms // 2 + 4), 64)])


def test_large_4000x3000x2000():
    CASES.sweep(BIG, [(4000, 3000, 2000)])


def test_large_4096():
    CASES.sweep(BIG[:4], [(4096, 4096, 4096)])


def test_rejects_bad_arguments():
    """Null pointers and negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
    CASES.check_rejects_bad_arguments("tc_f16_bias_relu")
