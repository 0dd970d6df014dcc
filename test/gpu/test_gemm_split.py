"""GPU tests of the split-K GEMM (test/gpu/split/*.sketch, docs/backend.md "Split-K GEMM").

split_auto.sketch: kernels without directives (`split_k auto`): small grids (under 3/4
of the SMs at the kernel's own tile) run the split form, whose K slice count the host
function chooses from M, N, K and the SM count; split_fixed.sketch: `split_k N` kernels
that always run the split form with N slices (sm_90a: a cluster of N blocks; sm_80 /
sm_90: N warp groups a block). Every case: random inputs, the output poisoned with NaN,
every element against an f64 reference of the kernel's epilogue (gemm_cases.py: rtol
1e-2 for f16/bf16 outputs, 1e-4 for f32). M in {1, 2, 7, 16, 77, 128}, ragged N and K
(K = 0, 1, primes, 14336), every epilogue form (bias per column and per row, the
residual add, silu(.) * U, the expression form, f32 output), A^T, B^T, batches, the
element path (misaligned bases); two runs give the same bits.
"""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

import sketch_gpu
from gemm_cases import GemmCases, expr, relu, sm90a_with_132_sms

# The epilogue of each kernel, by the name after its second '_' (gemm_cases.py).
EPILOGUES = {
    "plain": lambda acc, t, s: acc,
    "linear": lambda acc, t, s: acc,
    "bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "rowbias_gelu": lambda acc, t, s: F.gelu(acc + t["bias"][:, None]),
    "residual": lambda acc, t, s: acc + t["C"],
    "silu_mul": lambda acc, t, s: F.silu(acc) * t["C"],
    "expr": expr,
    "at": lambda acc, t, s: acc,
    "at_bt": lambda acc, t, s: acc,
    "f32out": lambda acc, t, s: acc + t["bias"],
    "batched": lambda acc, t, s: acc + t["bias"],
    "bcast": lambda acc, t, s: acc,
    "s2_plain": lambda acc, t, s: acc,
    "s3_linear": lambda acc, t, s: acc,
    "s4_bias_relu": lambda acc, t, s: relu(acc + t["bias"]),
    "s4_residual": lambda acc, t, s: acc + t["C"],
    "s2_at_bt": lambda acc, t, s: acc,
    "s3_f32out": lambda acc, t, s: acc + t["bias"],
    "s2_batched": lambda acc, t, s: acc,
    "w80_s2": lambda acc, t, s: acc,
    "w96_auto": lambda acc, t, s: acc,
}

CASES = GemmCases("split", EPILOGUES)
SMALL_M = [1, 2, 7, 16, 77, 128]


def all_kernels():
    return sorted(CASES.kernels())


def test_small_m_ragged():
    """Every kernel, M = 1 .. 128, N and K not multiples of any tile (1, primes, odd)."""
    shapes = [(m, n, k) for m in SMALL_M for n, k in [(1, 1), (257, 65), (131, 1031), (1000, 397)]]
    CASES.sweep(all_kernels(), shapes)


def test_k_zero_one_and_primes():
    """K = 0 (the epilogue of zero), K = 1, and prime K (a partial last k-tile in one slice)."""
    shapes = [(m, 200, k) for m in [1, 16, 77] for k in [0, 1, 13, 127, 509, 4099]]
    CASES.sweep(all_kernels(), shapes)


def test_large_k():
    """K = 14336 (the MLP's down projection): the most slices the rule gives."""
    CASES.sweep(all_kernels(), [(1, 384, 14336), (16, 136, 14336), (77, 520, 14336)])


def test_short_operands_tma():
    """Aligned sizes (the TMA path) with M under the split tile's 64 rows, N = 8 under its
    128 columns, and last tiles that overhang M and N: boxes of the rows left rounded up to
    8 (the tail maps, sketch::tma_box_rows)."""
    shapes = [(m, 1032, 4096) for m in (1, 5, 9, 33, 63)] + [(m, 8, 1024) for m in (3, 70)]
    shapes += [(77, 1032, 4096), (136, 1160, 1024)]  # a last tile that overhangs M and N
    CASES.sweep(all_kernels(), shapes)


def test_projection_shapes():
    """The LLM projection shapes at small M (N, K of 4096 and 6144), nn.Linear's layout."""
    names = ["sk_bf16_linear", "sk_f16_residual", "sk_bf16_silu_mul", "sk_bf16_s3_linear"]
    CASES.sweep(names, [(m, n, 4096) for m in [1, 16, 128] for n in [4096, 6144]])


def test_grids_around_the_rule():
    """Grids just under and over 3/4 of the SMs at the kernels' own tiles: both forms."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(128, 256 * n, 512) for n in [sms * 3 // 4 - 1, sms * 3 // 4 + 1]]
    shapes += [(128 * n, 256, 777) for n in [sms * 3 // 4 - 1, sms * 3 // 4 + 1]]
    CASES.sweep(["sk_f16_plain", "sk_bf16_linear", "sk_f16_bias_relu"], shapes)


def tail_shapes(sms):
    """Ragged shapes whose own-tile kernels (persistent, 128 x 256 tiles; 64 x 128 for the
    narrow kernel) end with a short last round that sketch::tail_split shares over clusters
    on a device of `sms` SMs: a tail of about a third of the SMs (pairs), a few tiles past
    one round (K long enough for 8 slices of 4 k-tiles; the H200 takes threes on 117
    blocks, its residency in clusters of 4 to 8 being too low), one tile past a round
    (eights on the H200: 120 blocks resident, 13 tiles past them), an odd k-tile count, and
    the narrow kernel's (M <= 64 and a grid of the own tile that covers the SMs). Only the
    16-byte (TMA) path splits, so N and K are multiples of 8 (M too in the first: the A^T
    kernels' rows; in the others they take the element path, which never splits)."""
    def rows_cols(tiles, cols, short):
        return 128 * -(-tiles // cols) - short, 256 * cols - 8
    m1, n1 = rows_cols(2 * sms + sms // 3, 22, 8)
    m2, n2 = rows_cols(sms + 20, 19, 5)
    m3, n3 = rows_cols(sms + 1, 19, 3)
    narrow_n = 128 * (sms * 3 // 2) - 8  # 64 x 128 tiles: a round and half of one
    return [(m1, n1, 1000), (m2, n2, 2048), (m3, n3, 2048), (m2, n1, 1064),
            (64, narrow_n, 520)]


def test_split_tail():
    """The persistent kernels' split tail (docs/backend.md, sketch::tail_split): the tiles
    past the last whole round summed over K by the blocks of a cluster, the whole epilogue
    in the reduction (bias, residual, f32 output, A^T / B^T; silu(.) * U runs one tile a
    block, unsplit). Every kernel at each shape, checked; split ones give the same bits
    twice, and other bits than a process with the split off (SKETCH_TAIL_SPLIT=0), so the
    split ran (the slices' f32 sums round apart from one tile's)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = tail_shapes(sms)
    # B K-major on 132 SMs: the persistent tile rule (sketch::persistent_cost) runs wave tiles
    # at the threes and eights shapes; these split: 128 x 144 in pairs, 128 x 256 in fours
    # (docs/backend.md, "Persistent tiles")
    k_major = shapes[:1] + [(388, 11288, 2048), (260, 12792, 2048)] if sms == 132 else shapes[:3]
    CASES.sweep(all_kernels(), shapes + k_major[1:])
    runs, split_bits = [], []
    whole_round = (128 * sms, 256, 1000)  # a control: one whole round, no tail to split
    for name in ["sk_f16_plain", "sk_f16_residual", "sk_f16_bias_relu"]:
        for m, n, k in (shapes[:3] if name == "sk_f16_plain" else k_major) + [whole_round]:
            values, bits = bits_of_two_runs(name, {"M": m, "N": n, "K": k}, keep_inputs=True)
            assert torch.equal(bits[0], bits[1]), f"{name} {m}x{n}x{k}: bits differ between runs"
            runs.append((name, values))
            split_bits.append(bits[0])
    if os.environ.get("SKETCH_TAIL_SPLIT", "").startswith("0"):
        return  # the split is off here too (sanitize.sh's racecheck pass)
    whole_bits = bits_with_tail_split_off(runs)
    failures = []
    for (name, v), split, whole in zip(runs, split_bits, whole_bits):
        shape = (v["M"], v["N"], v["K"])
        if torch.equal(split.cpu(), whole) != (shape == whole_round):
            failures.append(f"{name} {shape}: " + ("bits differ from the split-off process's"
                                                   if shape == whole_round else
                                                   "same bits as SKETCH_TAIL_SPLIT=0: no split"))
    assert not failures, "; ".join(failures)


def test_persistent_tiles():
    """Where the own grid covers the SMs (B K-major, M over 64 rows), the host function runs
    a wave tile of its height where sketch::persistent_cost puts it under 19/20 of 128 x
    256's (docs/backend.md, "Persistent tiles"): on 132 SMs 384 x 14336 (168 tiles split in
    pairs, 1.75 rounds, against 384 of 128 x 112, 3 rounds at 0.49 of the cost) takes
    128 x 112; 388 x 12792 (356 tiles of 128 x 144, 3 rounds at 0.90) takes 128 x 144;
    512 x 14336 (two whole rounds) and 260 x 12792 keep 128 x 256; 576 x 14336 (3 x 112
    tiles of 192 x 128, 2.5 rounds at 0.84) takes 192 x 128, a tile taller than its own
    (SplitRule::tallWaveRows). Every kernel checked; then which kernel ran (sk_f16_plain,
    B MN-major, always its own)."""
    take112 = [(384, 14336, 1024)]
    take144 = [(388, 12792, 2048)]
    take192 = [(576, 14336, 1024)]
    keep = [(512, 14336, 1024), (260, 12792, 2048)]
    CASES.sweep(all_kernels(), take112 + take144 + take192 + keep)
    assert_unbatched_ran(take112, "_128x112_kernel<", mn_major_b="_kernel<")
    assert_unbatched_ran(take144, "_128x144_kernel<", mn_major_b="_kernel<")
    assert_unbatched_ran(take192, "_192x128_kernel<", mn_major_b="_kernel<")
    assert_unbatched_ran(keep, "_kernel<", mn_major_b="_kernel<")


def bits_with_tail_split_off(runs):
    """The output bits of each (kernel name, its arguments) of `runs`, computed by a child
    process under SKETCH_TAIL_SPLIT=0 (sketch::tail_split reads it once a process), which
    keeps every tail whole; on the CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(runs, os.path.join(tmp, "runs.pt"))
        env = dict(os.environ, SKETCH_TAIL_SPLIT="0")
        subprocess.run([sys.executable, os.path.abspath(__file__), tmp], env=env, check=True)
        return torch.load(os.path.join(tmp, "bits.pt"))


def run_saved_calls(tmp):
    """The child of bits_with_tail_split_off: each saved call, its output poisoned first."""
    bits = [poisoned_run_bits(sketch_gpu.kernel(name), values, name).cpu()
            for name, values in torch.load(os.path.join(tmp, "runs.pt"))]
    torch.save(bits, os.path.join(tmp, "bits.pt"))


def assert_unbatched_ran(shapes, kernel, mn_major_b=None):
    """On sm_90a with 132 SMs (the rule's sizes are for H100 SXM and H200): each unbatched
    kernel at each of `shapes` launched NAME`kernel` (sk_f16_plain, whose B is MN-major,
    NAME`mn_major_b` where given)."""
    if not sm90a_with_132_sms():
        return
    for name in ["sk_f16_plain", "sk_bf16_linear", "sk_f16_bias_relu"]:
        expected = mn_major_b if name == "sk_f16_plain" and mn_major_b else kernel
        for m, n, k in shapes:
            CASES.assert_ran(name, m, n, k, name + expected)


def test_narrow_kernel():
    """sm_90a: the split tile's own kernel (NAME_narrow_kernel) runs where the rule gives one
    slice (M = 128, N = 4096, K = 264: 64 tiles of 64 x 128, and 5 k-tiles, too few for 2
    slices of the tall form; M = 16, N = 6144: 48 tiles, more than half the SMs' 66) and
    for M up to 64 rows whose own grid covers the SMs; M = 65 there runs the kernel's own
    tile; M = 16, N = 4096 the square split form (64 tiles of 64 x 64, 2 slices). Every
    kernel, checked."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    wide = 256 * (sms * 3 // 4 + 1)  # the own tile's grid covers 3/4 of the SMs at M <= 128
    shapes = [(1, wide, 520), (64, wide + 3, 136), (65, wide, 72), (128, 4096, 264),
              (16, 6144, 4096), (16, 4096, 4096)]
    CASES.sweep(all_kernels(), shapes)
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    if sms != 132:  # the last two expectations are for 132 SMs (H100 SXM, H200)
        shapes = shapes[:-2]
    for (m, n, k), expected in zip(shapes, ["_narrow_kernel", "_narrow_kernel", "_kernel",
                                            "_narrow_kernel", "_narrow_kernel",
                                            "_square_splitk_kernel"]):
        CASES.assert_ran("sk_f16_plain", m, n, k, "sk_f16_plain" + expected + "<")


def test_narrow_kernel_one_slice():
    """The narrow kernel where the rule gives one slice (M = 128, N about 4096: 64 tiles of
    64 x 128), every kernel, short K; small enough for compute-sanitizer (sanitize.sh)."""
    CASES.sweep(all_kernels(), [(128, 4096, 264), (97, 4100, 72)])


def test_narrow_kernel_rows():
    """The narrow kernel over several tile rows: 2 rows (M = 97, 128), an odd count whose
    last row holds 1 or 44 rows (M = 129, 300), two rounds of the persistent grid
    (M = 128, N = 8192: 128 tiles of 64 x 128, one round, where 128 x 48 takes two; M = 300,
    N = 6000 and 6144: 235 and 240 tiles, two rounds, where the wide kernels' take two or
    three of more rows; M = 128 with 4 k-tiles, too few for the tall split form's 2
    slices), ragged and aligned N, every kernel (MN-major B and A,
    batches, every epilogue form), checked; then, on sm_90a with 132 SMs, that the
    aligned ones ran the narrow kernel's TMA path (unbatched kernels: with the batch of 3,
    some of these grids cover 3/4 of the SMs at the kernel's own tile), except where B is
    K-major at M = 129, N = 4104, which runs 64 x 112 (111 tiles, 176 rows, against 99 of
    64 x 128, 192), and at M = 300, which runs 128 x 144 (126 and 129 tiles, one round of
    272 rows)."""
    shapes = [(97, 4100, 72), (128, 8192, 200), (129, 4104, 520), (300, 6000, 1000),
              (300, 6144, 136)]
    CASES.sweep(all_kernels(), shapes)
    assert_unbatched_ran(shapes[1:2], "_narrow_kernel<true, true>")
    assert_unbatched_ran(shapes[3:], "_128x144_kernel<true, true>", mn_major_b="_narrow_kernel<true, true>")
    assert_unbatched_ran(shapes[2:3], "_64x112_kernel<true, true>", mn_major_b="_narrow_kernel<true, true>")


def test_output_rows_not_whole_chunks():
    """N not a multiple of 8 with K one (M = 128, N = 8191: the narrow kernel; 4000 x 3001:
    the persistent one with its split tail; 1 x 50257, a vocabulary: a split form), every
    kernel checked; then, on sm_90a with 132 SMs, that the linear ones (W stored [N, K])
    ran kernel<true, false>: TMA loads, element stores. sk_f16_plain's B is stored [K, N],
    whose rows are then not whole chunks: the element path."""
    shapes = [(128, 8191, 200), (4000, 3001, 2000), (1, 50257, 768)]
    CASES.sweep(all_kernels(), shapes)
    assert_unbatched_ran(shapes[:1], "_narrow_kernel<true, false>", "_narrow_kernel<false, false>")
    assert_unbatched_ran(shapes[1:2], "_kernel<true, false>", "_kernel<false, false>")


def test_wave_tile_kernels():
    """The kernels of other tiles (NAME_MxN_kernel) where their waves move fewer operand
    rows than the narrow kernel's, ceil(tiles / SMs) x (BM + BN) on 132 SMs.
    128 x 96 (128 x 128 where B is MN-major) against 64 x 128: M = 264, N = 4096 (160
    narrow tiles, 2 rounds, against 129 or 96, 1 round), M = 136, N = 6144 (144 against 128
    or 96). 128 x 48 (B K-major): M = 128, N = 6144 (128 tiles, 176 rows, against 96 of
    64 x 128, 192 rows, and 256 of 64 x 48, 2 rounds), M = 300, N = 2000 (126 against 80).
    64 x 48 (B K-major) at M <= 64, where it has as many tiles as 128 x 48: M = 16,
    N = 6144 (128 tiles, 112 rows), M = 1, N = 6000, M = 64, N = 5000 (105 tiles).
    64 x 112 (B K-major) where N is a little under 132 x 128: M = 16, N = 14336 (128 tiles,
    176 rows, against 112 of 64 x 128, 192), M = 1, N = 14300, M = 64, N = 14336.
    128 x 112 (B K-major) where 64 x 112 takes two rounds and it one: M = 128, N = 14336
    (112 tiles, 240 rows, against 256 of 64 x 112, 352), M = 200, N = 7000 (126 tiles).
    128 x 144 (B K-major) where it takes one round and 128 x 96 two: M = 384, N = 6144 (129
    tiles, 272 rows, against 192 of 128 x 96, 448), M = 300, N = 6100 (against 240 of
    64 x 128, 384 rows; where B is MN-major that one runs). 192 x 128 (B K-major) where it
    takes one round and the others two, M over 192: M = 576, N = 4096 (96 tiles, 320 rows,
    against 215 of 128 x 96, 448), M = 1152, N = 2048, M = 600, N = 4100 (a last tile of 24
    rows); not at one row tile (M = 144, N = 11008: the narrow kernel, 64 x 128, runs).
    Where B is MN-major the narrow kernel runs in place of 128 x 48, 64 x 48 and 64 x 112
    (128 x 128: 256 rows), 128 x 128 in place of 128 x 112. Last tile rows of 8, 1, 24,
    44, 72 and 100 rows, ragged N; every kernel, checked; then, on sm_90a with 132 SMs, which
    kernel ran."""
    wide96 = [(264, 4096, 520), (136, 6144, 1000)]
    wide48 = [(128, 6144, 1000), (300, 2000, 1000)]
    tile64x48 = [(16, 6144, 1000), (1, 6000, 264), (64, 5000, 136)]
    tile64x112 = [(16, 14336, 264), (1, 14300, 136), (64, 14336, 72)]
    tile128x112 = [(128, 14336, 264), (200, 7000, 136)]
    tile128x144 = [(384, 6144, 264), (300, 6100, 136)]
    tile192x128 = [(576, 4096, 520), (1152, 2048, 264), (600, 4100, 264)]
    one_row_tile = [(144, 11008, 264)]
    ragged = [(257, 4100, 264), (200, 6152, 72), (100, 6100, 264)]
    CASES.sweep(all_kernels(), wide96 + wide48 + tile64x48 + tile64x112 + tile128x112 +
                tile128x144 + tile192x128 + one_row_tile + ragged)
    assert_unbatched_ran(wide96, "_128x96_kernel<", mn_major_b="_128x128_kernel<")
    assert_unbatched_ran(wide48, "_128x48_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran(tile64x48, "_64x48_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran(tile64x112, "_64x112_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran(tile128x112, "_128x112_kernel<", mn_major_b="_128x128_kernel<")
    assert_unbatched_ran(tile128x144[:1], "_128x144_kernel<", mn_major_b="_128x128_kernel<")
    assert_unbatched_ran(tile128x144[1:], "_128x144_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran(tile192x128, "_192x128_kernel<", mn_major_b="_128x128_kernel<")
    assert_unbatched_ran(one_row_tile, "_narrow_kernel<", mn_major_b="_narrow_kernel<")


def test_wave_tile_kernels_short_k():
    """The kernels of other tiles at short K, small enough for compute-sanitizer
    (sanitize.sh): 128 x 48 where B is K-major at M = 100, N = 6100 (128 tiles, 176 rows,
    against 256 of 64 x 48); 64 x 48 at M = 128, N = 2056 (86 tiles, 112 rows, against 43
    of 128 x 48 and 34 of 64 x 128) and M = 7, N = 6144; 128 x 96 (128 x 128) at M = 136,
    N = 6144; 64 x 112 at M = 7, N = 14344 (129 tiles, 176 rows, against 113 of 64 x 128);
    128 x 112 at M = 256, N = 7000 (126 tiles, 240 rows, against 252 of 64 x 112, 352);
    every kernel, checked."""
    CASES.sweep(all_kernels(), [(128, 2056, 72), (100, 6100, 72), (136, 6144, 72), (7, 6144, 72),
                                (7, 14344, 72), (256, 7000, 72)])
    assert_unbatched_ran([(100, 6100, 72)], "_128x48_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran([(128, 2056, 72), (7, 6144, 72)], "_64x48_kernel<",
                         mn_major_b="_narrow_kernel<")
    assert_unbatched_ran([(7, 14344, 72)], "_64x112_kernel<", mn_major_b="_narrow_kernel<")
    assert_unbatched_ran([(256, 7000, 72)], "_128x112_kernel<", mn_major_b="_128x128_kernel<")


def test_tall_split_form():
    """The tall split form (128 x 64 tiles, K over a cluster; NAME_tall_splitk_kernel) for M
    over 64 rows where it takes 2 slices or more and, up to 128 rows, the square form's
    blocks do not outnumber its own (132 SMs: M = 128, N = K = 4096: 64 tiles, 2 slices,
    against 128 of 64 x 64 with 1; M = 200, N = 2056: 66 tiles, over 128 rows), with
    ragged N and K, a last tile that overhangs M and N, every kernel (MN-major B and A,
    batches, every epilogue form), checked; then, on sm_90a with 132 SMs, that the
    unbatched aligned ones ran it."""
    shapes = [(128, 4096, 4096), (200, 2056, 1000), (77, 1000, 14336), (65, 1031, 1031),
              (128, 4100, 520)]
    CASES.sweep(all_kernels(), shapes)
    assert_unbatched_ran(shapes[:2], "_tall_splitk_kernel<")


def test_square_split_form():
    """The square split form (64 x 64 tiles, K over a cluster; NAME_square_splitk_kernel) for
    M up to 64 rows where it takes 2 slices or more over all the SMs (132 SMs: M = 1 and 16,
    N = K = 4096: 64 tiles; M = 64, N = 4100: 65 tiles, the last 4 columns wide; M = 7,
    N = 1031, K = 14336), ragged N and K, every kernel (MN-major B and A, batches, every
    epilogue form), checked; then, on sm_90a with 132 SMs, that the unbatched aligned ones
    ran it. Also for M up to 128 where its blocks outnumber the tall form's: M = 100,
    N = 2056 (66 tiles, 2 slices, against 33 tall ones, 2 slices), M = 77, N = K = 2048
    (the Llama layer's projection: 64 tiles against 32). M = 16, N = 6144 (96 tiles,
    1 slice) runs another kernel."""
    shapes = [(1, 4096, 4096), (16, 4096, 4096), (100, 2056, 1000), (77, 2048, 2048),
              (64, 4100, 520), (7, 1031, 14336), (2, 2000, 1000), (16, 6144, 264)]
    CASES.sweep(all_kernels(), shapes)
    assert_unbatched_ran(shapes[:4], "_square_splitk_kernel<")


def test_square_split_form_short_k():
    """The square split form at short K (5 and 9 k-tiles), small enough for compute-sanitizer
    (sanitize.sh): M = 1, 33 and 64 over 2 slices, every kernel, checked."""
    shapes = [(1, 2056, 520), (33, 1000, 520), (64, 4100, 520)]
    CASES.sweep(all_kernels(), shapes)
    assert_unbatched_ran(shapes[:1], "_square_splitk_kernel<")


def test_misaligned_base_pointers():
    """Bases one element off 16 bytes: the element path of both forms (no tensor maps)."""
    CASES.sweep(["sk_f16_bias_relu", "sk_bf16_linear", "sk_f16_residual", "sk_bf16_batched",
                 "sk_f16_s4_bias_relu", "sk_bf16_s3_f32out"],
                [(1, 136, 520), (77, 264, 1032), (128, 72, 72)], misalign=True)


def poisoned_run_bits(call, arguments, label):
    """The bits of the output D after one call with D poisoned with NaN first (a copy)."""
    out = arguments["D"]
    out.fill_(float("nan"))
    status = call(**arguments)
    torch.cuda.synchronize()
    assert status == 0, f"{label}: returned cudaError {status}"
    return out.clone().view(torch.int16 if out.element_size() == 2 else torch.int32)


def bits_of_two_runs(name, sizes, keep_inputs=False):
    """The output's bits after each of two runs of kernel `name` on the same inputs (the
    output poisoned with NaN before each); with `keep_inputs`, (the call's arguments, bits)."""
    values, _ = CASES.make_inputs(name, sizes)
    call = sketch_gpu.kernel(name)
    used = {p for _, p in call.params}
    arguments = {p: v for p, v in values.items() if p in used}
    label = f"{name} {sizes['M']}x{sizes['N']}x{sizes['K']}"
    bits = [poisoned_run_bits(call, arguments, label) for _ in range(2)]
    return (arguments, bits) if keep_inputs else bits


def test_same_bits_twice():
    """Same inputs, same bits: the slices' partial tiles are summed in a fixed order."""
    failures = []
    for name in all_kernels():
        for m, n, k in [(1, 1000, 4099), (77, 264, 14336), (16, 4096, 4096)]:
            bits = bits_of_two_runs(name, {"M": m, "N": n, "K": k, **CASES.batch_sizes(name)})
            if not torch.equal(bits[0], bits[1]):
                failures.append(f"{name} {m}x{n}x{k}: {(bits[0] != bits[1]).sum().item()} "
                                "elements differ between two runs")
    assert not failures, "; ".join(failures[:4])


def run_chain(call, x, weights, buffers, m, sync):
    """Y_i = Y_{i-1} W_i^T through `buffers` in turn (each step reads the buffer the step
    before wrote and overwrites the one two steps back); torch.cuda.synchronize() after each
    step when `sync`."""
    src = x
    for i, w in enumerate(weights):
        dst = buffers[i % len(buffers)]
        status = call(A=src, B=w, D=dst, M=m, N=w.shape[0], K=w.shape[1])
        assert status == 0, f"step {i}: cudaError {status}"
        if sync:
            torch.cuda.synchronize()
        src = dst
    return src


def test_dependent_launch_chain():
    """Back-to-back calls, eager and in a CUDA graph, where each reads the previous one's
    output and overwrites what the one before read: the one-wave grids start as programmatic
    dependent launches (docs/backend.md), and the result must be bitwise the one with a
    synchronization after every call. Small M (the split form, 2-4 slices), M = 128 (the
    narrow kernel), M = 2000 (the kernel's own persistent tile, several tiles a block)."""
    call = sketch_gpu.kernel("sk_bf16_linear")
    failures = []
    for m, n in [(1, 1024), (16, 1024), (128, 2048), (2000, 4096)]:
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        weights = [(torch.randn(n, n, device="cuda") / n ** 0.5).to(torch.bfloat16) for _ in range(6)]
        buffers = [torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        expected = run_chain(call, x, weights, buffers, m, sync=True).clone()
        reference = x.double()
        for w in weights:
            reference = (reference @ w.double().t()).to(torch.bfloat16).double()
        error = ((expected.double() - reference).norm() / reference.norm()).item()
        if not error < 2e-2:
            failures.append(f"M={m} N={n}: synchronized chain off torch's by {error:.2e}")
        failures += sketch_gpu.back_to_back_failures(
            lambda sync: run_chain(call, x, weights, buffers, m, sync), buffers, expected,
            f"M={m} N={n}")
    assert not failures, "; ".join(failures)


def test_rejects_bad_arguments():
    """Null pointers and negative sizes: cudaErrorInvalidValue, nothing written; M = 0: a no-op."""
    CASES.check_rejects_bad_arguments("sk_f16_bias_relu")
    CASES.check_rejects_bad_arguments("sk_f16_s4_bias_relu")


if __name__ == "__main__":  # bits_with_tail_split_off's child process
    run_saved_calls(sys.argv[1])
