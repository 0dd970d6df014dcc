"""GPU tests of the attention backend against an f32 reference.

The kernels come from test/gpu/attention/*.sketch (attention_variants: d = 64 and
128, MHA and GQA, 4 and 8 warps; attention_heads: the other head dimensions, D_qk
!= D_v too; attention_layouts: the seed's chain E, F, G, H, I with F and H in
either storage order; attention_chain: looped back-to-back GEMMs without a
Softmax and a scaling after the Softmax; attention_groups: tensors [B, G, H, S, D]),
compiled into the GPU suite's library. Every case draws
fresh random inputs, poisons the output with NaN, and compares every element
with the reference: softmax(Q K^T * scale) V in f32 on the f16/bf16 inputs, with
the causal mask aligned to the bottom right (row i sees keys 0..i + L - S, as
FlashAttention 2.1+) and rows that see no key equal to 0 (checked exactly). K
and V with fewer heads (HK) serve query head h with head h / (H / HK): HK = H is
multi-head, 1 < HK < H grouped-query, HK = 1 multi-query attention.

Runs under the GPU harness (run_tests.py, through test/gpu/run.sh), which calls
the `test_*` functions; test/gpu/run.sh -k attention runs only these.
"""
import itertools
import math

import torch

import sketch_gpu

# (S, L): query rows and keys, as in FlashAttention's own tests (cross attention too).
SIZES = [(1, 1), (17, 17), (113, 203), (128, 217), (256, 512), (512, 256), (1023, 1024),
         (1024, 1023), (2049, 2049)]
# Query heads and, per mode, key/value heads.
HEADS = 4
MODES = {"mha": HEADS, "gqa": 2, "mqa": 1}
# Largest |out - ref| allowed, and the largest ||out - ref|| / ||ref||: P is
# rounded to the element type before P V, and O once when stored.
TOLERANCE = {"f16": (4e-3, 2e-3), "bf16": (3e-2, 1.2e-2)}


def reference(q, k, v, scale, causal, softmax=True, gain=1.0, steps=None):
    """q [B, H, S, Dqk], k [B, HK, L, Dqk], v [B, HK, L, Dv] (logical layouts) -> f32 O.
    Without softmax (a looped back-to-back GEMM) the scaled scores, masked ones 0,
    times V; gain: the scaling of the probabilities after the softmax; steps: a
    function of the scaled scores applied before the mask (the statements on them)."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    scores = q.float() @ k.transpose(-1, -2) * scale
    if steps is not None:
        scores = steps(scores)
    s, l = scores.shape[-2:]
    if causal:
        rows = torch.arange(s, device=q.device)[:, None]
        cols = torch.arange(l, device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows + (l - s), 0.0 if not softmax else float("-inf"))
    if not softmax:
        return scores @ v
    # A row that sees no key is all -inf: softmax gives NaN there, the kernel 0.
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0) * gain @ v


def check(what, out, ref, dtype, unit=1.0):
    """Every element finite and within the tolerance, both measured in `unit` (the
    chains without softmax, whose outputs grow with the keys: their largest |ref|)."""
    out = out.float() / unit
    ref = ref / unit
    assert torch.isfinite(out).all(), \
        f"{what}: {(~torch.isfinite(out)).sum().item()} elements not finite (unwritten or NaN)"
    max_abs = (out - ref).abs().max().item()
    rel = ((out - ref).norm() / max(ref.norm().item(), 1e-30)).item()
    atol, rtol = TOLERANCE[dtype]
    assert max_abs <= atol and rel <= rtol, \
        f"{what}: max |err| {max_abs:.3g} (limit {atol}), rel {rel:.3g} (limit {rtol})"


def batch_for(s, l):
    return 1 if max(s, l) > 1024 else 2


def run_case(name, dtype, causal, s, l, hk, dqk, dv, *, b=None, h=HEADS, scale=None,
             names=("Q", "K", "V", "O"), head_names=("H", "HK"), key_rows=True,
             value_rows=True, softmax=True, gain=None, steps=None, scalars=None, groups=None):
    """One call of kernel `name` on random inputs; K (V) stored [L, D] when key_rows
    (value_rows) else [D, L]. softmax=False: a looped back-to-back GEMM (no softmax);
    gain: the scaling after the softmax (the kernel's `gain` parameter); steps: the
    reference of the statements on the scaled scores; scalars: more scalar arguments;
    groups: the kernel's tensors are [B, G, H, ..] with G = groups and B = b / groups (the
    same memory as [b, H, ..])."""
    t = sketch_gpu.DTYPES[dtype]
    b = b or batch_for(s, l)
    q = torch.randn(b, h, s, dqk, device="cuda", dtype=t)
    k = torch.randn(b, hk, l, dqk, device="cuda", dtype=t)
    v = torch.randn(b, hk, l, dv, device="cuda", dtype=t)
    o = torch.full((b, h, s, dv), float("nan"), device="cuda", dtype=t)
    scale = scale if scale is not None else 1.0 / math.sqrt(dqk)
    stored_k = k if key_rows else k.transpose(-1, -2).contiguous()
    stored_v = v if value_rows else v.transpose(-1, -2).contiguous()
    values = dict(zip(names, (q, stored_k, stored_v, o)))
    values.update({"scale": scale, "B": b, head_names[0]: h, head_names[1]: hk, "S": s, "L": l})
    if groups:
        values.update({"B": b // groups, "G": groups})
    if gain is not None:
        values["gain"] = gain
    values.update(scalars or {})
    call = sketch_gpu.kernel(name)
    used = {p for _, p in call.params}
    status = call(**{p: x for p, x in values.items() if p in used})
    torch.cuda.synchronize()
    what = f"{name} S={s} L={l} B={b} H={h} HK={hk}"
    assert status == 0, f"{what}: returned cudaError {status}"
    if causal and s > l:  # rows 0 .. S - L - 1 see no key
        assert (o[:, :, :s - l].float() == 0).all(), f"{what}: rows that see no key are not 0"
    ref = reference(q, k, v, scale, causal, softmax, 1.0 if gain is None else gain, steps)
    # Without softmax O sums L products (about sqrt(L) in size): errors relative to its largest;
    # a gain above 1 after the softmax scales O and its errors with it.
    unit = max(abs(gain or 0.0), 1.0) if softmax else max(ref.abs().max().item(), 1.0)
    check(what, o, ref, dtype, unit)


def heads_kernel(dtype, dqk, dv, causal, variant=""):
    """The grouped-query kernel of attention_variants (d = 64, 128), attention_heads or
    (variant "_default") attention_hopper."""
    value = f"_v{dv}" if dv != dqk else ""
    return f"attn_{dtype}_d{dqk}{value}{variant}_gqa_{'causal' if causal else 'full'}"


def matrix(dtype, dqk, dv, variant=""):
    """Every (S, L), causal and not, multi-head, grouped and multi-query."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        run_case(heads_kernel(dtype, dqk, dv, causal, variant), dtype, causal, s, l, hk, dqk, dv)


# The default tiles of d = 64 and 128 (attention_hopper.sketch): with ARCH=sm_90a the
# warp-specialized wgmma kernel, on sm_80 the mma.sync one.
def test_f16_d64_default():
    matrix("f16", 64, 64, "_default")


def test_f16_d128_default():
    matrix("f16", 128, 128, "_default")


def test_bf16_d64_default():
    matrix("bf16", 64, 64, "_default")


def test_bf16_d128_default():
    matrix("bf16", 128, 128, "_default")


def test_f16_d64_three_warpgroups():
    """attention_hopper's BM = 192 kernels: three consumer warpgroups taking turns."""
    matrix("f16", 64, 64, "_wg3")


def test_three_warpgroups_ragged():
    for causal in (False, True):
        name = heads_kernel("f16", 64, 64, causal, "_wg3")
        for (s, l), hk in [((1, 1), 4), ((17, 203), 2), ((203, 17), 1), ((193, 65), 4)]:
            run_case(name, "f16", causal, s, l, hk, 64, 64, b=2, scale=-0.3)


def test_f16_d32():
    matrix("f16", 32, 32)


def test_f16_mma_sync_heads():
    """attention_heads_mma.sketch: d = 32, 80 and 96 on the mma.sync kernel (the heads
    kernels of those dimensions take the sm_90a kernel under ARCH=sm_90a)."""
    for d in (32, 80, 96):
        matrix("f16", d, d, "_mma")


def test_f16_d64():
    matrix("f16", 64, 64)


def test_f16_d80():
    matrix("f16", 80, 80)


def test_f16_d96():
    matrix("f16", 96, 96)


def test_f16_d128():
    matrix("f16", 128, 128)


def test_f16_d192():
    matrix("f16", 192, 192)


def test_f16_d256():
    matrix("f16", 256, 256)


def test_f16_d192_v128():
    matrix("f16", 192, 128)


def test_bf16_d32():
    matrix("bf16", 32, 32)


def test_bf16_d64():
    matrix("bf16", 64, 64)


def test_bf16_d80():
    matrix("bf16", 80, 80)


def test_bf16_d96():
    matrix("bf16", 96, 96)


def test_bf16_d128():
    matrix("bf16", 128, 128)


def test_bf16_d192():
    matrix("bf16", 192, 192)


def test_bf16_d256():
    matrix("bf16", 256, 256)


def test_bf16_d192_v128():
    matrix("bf16", 192, 128)


def test_multi_head_kernels():
    """attention_variants' MHA kernels (K and V with H heads), which bench_attention times."""
    for dtype, d, causal, (s, l) in itertools.product(["f16", "bf16"], [64, 128], [False, True],
                                                      SIZES):
        name = f"attn_{dtype}_d{d}_mha_{'causal' if causal else 'full'}"
        run_case(name, dtype, causal, s, l, HEADS, d, d)


def test_eight_warps():
    for causal, (s, l) in itertools.product([False, True], SIZES):
        name = f"attn_f16_d128_mha_{'causal' if causal else 'full'}_w8"
        run_case(name, "f16", causal, s, l, HEADS, 128, 128)


def layouts(dtype):
    """The seed's chain (E, F, H, I) with F stored [D, L] (kc) or [L, D] (kr) and H
    stored [L, D] (vr) or [D, L] (vc), over every size and head mode."""
    forms = [("kc", "vr"), ("kr", "vc"), ("kc", "vc")]
    for d, (kf, vf), causal in itertools.product([64, 80], forms, [False, True]):
        if causal and (dtype, d) != ("f16", 64):
            continue  # the causal layout kernels are f16 at d = 64
        name = f"seed_{dtype}_d{d}_{kf}_{vf}" + ("_causal" if causal else "")
        for (s, l), hk in itertools.product(LAYOUT_SIZES, MODES.values()):
            seed_case(name, dtype, causal, s, l, hk, d, kf, vf)


# On sm_90a keys stored a key per column are read by TMA where L is a multiple of 8 (rows
# of 16 bytes), by the mma.sync kernel otherwise: SIZES has both, and these add L a
# multiple of 8 but not of the key tile.
LAYOUT_SIZES = SIZES + [(100, 200), (77, 1000)]


def seed_case(name, dtype, causal, s, l, hk, d, kf, vf):
    run_case(name, dtype, causal, s, l, hk, d, d, names=("E", "F", "H", "I"),
             head_names=("NH", "NK"), key_rows=kf == "kr", value_rows=vf == "vr")


def test_layouts_kernel_by_keys():
    """sm_90a: F and H stored a key per column run the TMA kernel at L = 200 and the
    mma.sync kernel (NAME_mma) at L = 203, each checked against the reference."""
    if torch.cuda.get_device_capability() != (9, 0) or sketch_gpu.generated_arch() != "sm_90a":
        return
    for kf, vf in [("kc", "vr"), ("kr", "vc"), ("kc", "vc")]:
        name = f"seed_f16_d64_{kf}_{vf}"
        for l, expected in [(200, name + "_kernel("), (203, name + "_mma_kernel(")]:
            ran = sketch_gpu.launched_kernels(
                lambda: seed_case(name, "f16", False, 100, l, HEADS, 64, kf, vf))
            assert ran is None or any(expected in n for n in ran), \
                f"{name} L={l}: no '{expected}' ran: {ran}"


def test_layouts_wide_heads():
    """F and H stored [D, L] at D = 128 (causal too) and 256 (bf16): the sm_90a kernel's
    widest key-per-column tiles, on both sides of L % 8 and of the key tile."""
    sizes = [(113, 203), (100, 200), (256, 512), (1024, 1023), (77, 1000)]
    for (name, dtype, d, causal), (s, l), hk in itertools.product(
            [("seed_f16_d128_kc_vc", "f16", 128, False),
             ("seed_f16_d128_kc_vc_causal", "f16", 128, True),
             ("seed_bf16_d256_kc_vc", "bf16", 256, False)], sizes, [HEADS, 1]):
        seed_case(name, dtype, causal, s, l, hk, d, "kc", "vc")


def test_layouts_f16():
    layouts("f16")


def test_layouts_bf16():
    layouts("bf16")


def test_scale_and_batch():
    """A scale other than 1/sqrt(d), negative too, and more batches and heads."""
    run_case("attn_f16_d64_mha_full", "f16", False, 200, 300, 5, 64, 64, b=3, h=5, scale=0.5)
    run_case("attn_bf16_d128_gqa_causal", "bf16", True, 300, 200, 2, 128, 128, b=3, h=6,
             scale=-0.2)
    run_case("attn_f16_d96_gqa_full", "f16", False, 129, 65, 1, 96, 96, b=5, h=8, scale=2.0)
    run_case("attn_bf16_d192_v128_gqa_causal", "bf16", True, 65, 129, 3, 192, 128, b=2, h=9)


def test_three_leading_dimensions():
    """attention_groups.sketch: Q [B, G, H, S, D], K and V [B, G, HK, L, D], O like Q (B = 2,
    G = 3): the sm_90a kernel, causal too, and the mma.sync one; MHA, GQA and MQA."""
    for (s, l), hk in itertools.product([(1, 1), (113, 203), (256, 512), (1024, 1023)],
                                        (HEADS, 2, 1)):
        run_case("attn_f16_d128_groups_full", "f16", False, s, l, hk, 128, 128, b=6, groups=3,
                 scale=1.0)
        run_case("attn_bf16_d64_groups_causal", "bf16", True, s, l, hk, 64, 64, b=6, groups=3)
        run_case("attn_f16_d96_groups_sync_full", "f16", False, s, l, hk, 96, 96, b=6, groups=3)


def test_rejects_bad_sizes():
    """H not a multiple of HK, L = 0 and a misaligned tensor are cudaErrorInvalidValue
    (1), launching nothing: the output stays NaN."""
    t = torch.float16
    q = torch.randn(1, 3, 16, 64, device="cuda", dtype=t)
    o = torch.full_like(q, float("nan"))
    gqa = sketch_gpu.kernel("attn_f16_d64_gqa_full")
    k = torch.randn(1, 2, 16, 64, device="cuda", dtype=t)
    assert gqa(Q=q, K=k, V=k, O=o, scale=0.125, B=1, H=3, S=16, HK=2, L=16) == 1
    k0 = torch.randn(1, 3, 0, 64, device="cuda", dtype=t)
    assert gqa(Q=q, K=k0, V=k0, O=o, scale=0.125, B=1, H=3, S=16, HK=3, L=0) == 1
    storage = torch.randn(3 * 16 * 64 + 8, device="cuda", dtype=t)
    shifted = storage[1:1 + 3 * 16 * 64].view(1, 3, 16, 64)
    k3 = torch.randn(1, 3, 16, 64, device="cuda", dtype=t)
    assert gqa(Q=shifted, K=k3, V=k3, O=o, scale=0.125, B=1, H=3, S=16, HK=3, L=16) == 1
    torch.cuda.synchronize()
    assert torch.isnan(o.float()).all()


def test_default_kernels_ragged():
    """attention_hopper's default kernels and attention_heads' d = 32, 80, 96 (the
    sm_90a kernel under ARCH=sm_90a; short of whole 64-column panels) on ragged sizes,
    other scales and batches: sanitize.sh runs this under memcheck and racecheck. A scale that is not positive (negative, 0) takes the kernel's other
    branch: Q multiplied by its sign in shared memory, the magnitude folded into exp2."""
    defaults = [(64, "_default"), (128, "_default"), (32, ""), (80, ""), (96, "")]
    for dtype, (d, variant), causal in itertools.product(["f16", "bf16"], defaults, [False, True]):
        name = heads_kernel(dtype, d, d, causal, variant)
        for (s, l), hk in [((1, 1), 4), ((17, 203), 2), ((203, 17), 1), ((129, 65), 4)]:
            run_case(name, dtype, causal, s, l, hk, d, d, b=2, scale=-0.3)
        run_case(name, dtype, causal, 129, 65, 4, d, d, b=1, scale=0.0)
        run_case(name, dtype, causal, 65, 129, 2, d, d, b=1, scale=0.7)


def causal_head_group(kv_bytes, heads):
    """sketch::causal_head_group (host.h), restated: how many heads a causal kernel's grid
    walks together on this device."""
    fit = torch.cuda.get_device_properties(0).L2_cache_size // 2 // kv_bytes
    fewest = -(-heads // 65535)
    group = min(max(fit, fewest), heads)
    group = -(-heads // -(-heads // group))
    for g in range(group, max(group // 2, 1) - 1, -1)[:64]:
        if 2 * g >= group and g >= fewest and heads % g == 0:
            return g
    return group


def test_causal_block_order_partial_group():
    """The causal block order (groups of heads whose K and V fit in half the L2, their row
    tiles the last first): a head count no group size divides, so the last group has
    blocks past the last head, which return; the sm_90a and the mma.sync kernels, MHA and
    MQA (the key/value head from the flat head index)."""
    s, l, d = 300, 2048, 64
    heads = next((h for h in (101, 103, 107, 109, 113)
                  if h % causal_head_group(l * 2 * d * 2, h) != 0), None)
    assert heads is not None, "no head count leaves a partial group on this device"
    for name, dd in [(heads_kernel("f16", d, d, True, "_default"), d),
                     (heads_kernel("f16", 32, 32, True, "_mma"), 32)]:
        for hk in (heads, 1):
            run_case(name, "f16", True, s, l, hk, dd, dd, b=1, h=heads)


def test_causal_rows_over_one_launch():
    """More row tiles than one launch's grid y holds (65535 of 128 rows): the host launches
    the row tiles in slices from row_base, the last first. With L << S only the last L rows
    see keys; every other row must be exactly 0 (the output is poisoned first)."""
    t = torch.float16
    call = sketch_gpu.kernel("attn_f16_d64_default_gqa_causal")
    s, l, d = 65535 * 128 + 333, 300, 64
    q = torch.randn(1, 1, s, d, device="cuda", dtype=t)
    k = torch.randn(1, 1, l, d, device="cuda", dtype=t)
    v = torch.randn(1, 1, l, d, device="cuda", dtype=t)
    o = torch.full((1, 1, s, d), float("nan"), device="cuda", dtype=t)
    assert call(Q=q, K=k, V=v, O=o, scale=0.125, B=1, H=1, S=s, HK=1, L=l) == 0
    torch.cuda.synchronize()
    assert (o[:, :, :s - l].float() == 0).all(), "rows that see no key are not 0"
    ref = reference(q[:, :, s - l:], k, v, 0.125, True)
    check(f"causal S={s} L={l}", o[:, :, s - l:], ref, "f16")
    del q, o


def test_key_splits():
    """Grids short of the SMs (decoding a few query rows over many keys, few heads): the
    sm_90a kernels share each row tile's key tiles among the blocks of a cluster
    (sketch::key_splits) and sum their rows through distributed shared memory. Decode
    shapes, MHA/GQA/MQA, a causal mask whose row tiles see different key counts (bottom-
    right, S < L), keys not a multiple of the key tile, the chain without a softmax (plain
    sums), D_qk != D_v, bf16, scales that are not positive; each case twice, the same bits."""
    cases = [  # kernel, dtype, causal, S, L, H, HK, Dqk, Dv, scale, softmax
        (heads_kernel("f16", 128, 128, False, "_default"), "f16", False, 1, 4097, 32, 8, 128,
         128, None, True),
        (heads_kernel("f16", 64, 64, False, "_default"), "f16", False, 3, 3001, 4, 1, 64, 64,
         None, True),
        (heads_kernel("f16", 128, 128, True, "_default"), "f16", True, 200, 5000, 2, 2, 128,
         128, None, True),
        (heads_kernel("bf16", 64, 64, True, "_default"), "bf16", True, 1, 2000, 4, 2, 64, 64,
         -0.2, True),
        (heads_kernel("f16", 192, 128, False), "f16", False, 17, 2500, 2, 1, 192, 128, None,
         True),
        (heads_kernel("f16", 256, 256, True), "f16", True, 130, 1500, 1, 1, 256, 256, 0.0,
         True),
        (chain_name("chain", "f16", 128, False), "f16", False, 5, 2000, 2, 2, 128, 128, None,
         False),
        (chain_name("chain", "f16", 64, True), "f16", True, 64, 3000, 2, 1, 64, 64, None,
         False),
    ]
    for name, dtype, causal, s, l, h, hk, dqk, dv, scale, softmax in cases:
        torch.manual_seed(s * 7919 + l)
        run_case(name, dtype, causal, s, l, hk, dqk, dv, b=1, h=h, scale=scale,
                 softmax=softmax)
    # Determinism: the same inputs twice give the same bits (the blocks sum in rank order).
    call = sketch_gpu.kernel(heads_kernel("f16", 128, 128, False, "_default"))
    t = torch.float16
    q = torch.randn(1, 16, 1, 128, device="cuda", dtype=t)
    k = torch.randn(1, 4, 4096, 128, device="cuda", dtype=t)
    v = torch.randn(1, 4, 4096, 128, device="cuda", dtype=t)
    outs = []
    for _ in range(2):
        o = torch.full_like(q, float("nan"))
        assert call(Q=q, K=k, V=v, O=o, scale=0.09, B=1, H=16, S=1, HK=4, L=4096) == 0
        outs.append(o)
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1]), "two runs of the same split differ"
    check("split S=1 L=4096", outs[0], reference(q, k, v, 0.09, False), "f16")


def test_short_grid_rows64():
    """A short grid without a mask takes the 64-row kernel where its twice as many row tiles
    split the keys as many ways as the 128-row kernel's (the host compares the two kernels'
    sketch::key_splits). Every case against the reference; which kernel ran is checked on a
    132-SM device: B1 H32 HK8 S = 256 L = 8192 (1024 packed rows: 64 row tiles split in 2,
    while the 64-row kernel's 128 cannot split) keeps the 128-row kernel; on an H200, where
    the 128-row kernel's 32 row tiles at S = 128 split in 2 (fewer than 32 clusters of 4 fit),
    as the 64-row kernel's 64 do, S = 128 takes NAME_rows64. The other cases' splits depend
    on how many clusters the device holds at once (its GPCs): only their outputs are checked."""
    name = heads_kernel("f16", 128, 128, False, "_default")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    known = {256: sms == 132, 128: sms == 132 and "H200" in torch.cuda.get_device_name()}
    for s, l, rows64 in ((128, 8192, True), (256, 8192, False), (64, 8192, None),
                         (97, 3000, None), (130, 1025, None)):
        torch.manual_seed(s * 17 + l)
        ran = sketch_gpu.launched_kernels(
            lambda: run_case(name, "f16", False, s, l, 8, 128, 128, b=1, h=32))
        if (ran is None or rows64 is None or not known.get(s)
                or sketch_gpu.generated_arch() != "sm_90a"):
            continue
        took = any(name + "_rows64_kernel" in n for n in ran)
        assert took == rows64, f"{name} S={s} L={l}: the 64-row kernel {'did not run' if rows64 else 'ran'}: {ran}"


def test_one_query_row_and_packed_heads():
    """One query row of a causal kernel takes the 64-row kernel without the mask (bottom-right,
    row 0 sees every key), whose host packs grouped heads into rows; grouped heads of the
    kernels without a mask pack for every S (rows of several heads in one tile, tiles that
    end inside a head). Against the causal reference, every element."""
    for dtype, d in (("f16", 128), ("bf16", 64)):
        name = heads_kernel(dtype, d, d, True, "_default")
        for l, h, hk in ((1, 4, 4), (17, 8, 2), (200, 8, 1), (4097, 32, 8), (1000, 3, 3)):
            torch.manual_seed(l * 31 + h)
            run_case(name, dtype, True, 1, l, hk, d, d, b=2, h=h)
    name = heads_kernel("f16", 128, 128, False, "_default")
    for s, l, h, hk in ((3, 500, 8, 2), (17, 64, 8, 1), (63, 130, 4, 2), (65, 300, 6, 3)):
        torch.manual_seed(s * 131 + l)
        run_case(name, "f16", False, s, l, hk, 128, 128, b=2, h=h)


def test_default_kernels_reject_bad_sizes():
    """The default kernels refuse a misaligned tensor and L = 0 without launching."""
    t = torch.float16
    for d in (64, 128):
        call = sketch_gpu.kernel(f"attn_f16_d{d}_default_gqa_full")
        q = torch.randn(1, 2, 16, d, device="cuda", dtype=t)
        o = torch.full_like(q, float("nan"))
        storage = torch.randn(2 * 16 * d + 8, device="cuda", dtype=t)
        shifted = storage[1:1 + 2 * 16 * d].view(1, 2, 16, d)
        assert call(Q=q, K=shifted, V=q, O=o, scale=0.1, B=1, H=2, S=16, HK=2, L=16) == 1
        k0 = torch.randn(1, 2, 0, d, device="cuda", dtype=t)
        assert call(Q=q, K=k0, V=k0, O=o, scale=0.1, B=1, H=2, S=16, HK=2, L=0) == 1
        torch.cuda.synchronize()
        assert torch.isnan(o.float()).all()


# Chained GEMMs beyond softmax attention (issue 15), attention_chain.sketch.
def chain_name(prefix, dtype, d, causal, variant=""):
    return f"{prefix}_{dtype}_d{d}{variant}_{'causal' if causal else 'full'}"


def chain_matrix(dtype, d):
    """A looped back-to-back GEMM, O = (Q K^T * scale) V over every key (a causal mask
    zeroes scores), default tiles (the sm_90a kernel under ARCH=sm_90a), every size
    and head mode."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        run_case(chain_name("chain", dtype, d, causal), dtype, causal, s, l, hk, d, d,
                 softmax=False)


def test_chain_f16_d64():
    chain_matrix("f16", 64)


def test_chain_f16_d128():
    chain_matrix("f16", 128)


def test_chain_bf16_d64():
    chain_matrix("bf16", 64)


def test_chain_bf16_d128():
    chain_matrix("bf16", 128)


def test_chain_mma_sync():
    """The looped back-to-back GEMM on mma.sync tiles and with K and V stored a key per
    column (the mma.sync kernel on every architecture), other scales and batches."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        run_case(chain_name("chain", "f16", 64, causal, "_sync"), "f16", causal, s, l, hk, 64,
                 64, softmax=False)
        run_case(chain_name("chain", "f16", 64, causal, "_kc_vc"), "f16", causal, s, l, hk, 64,
                 64, softmax=False, key_rows=False, value_rows=False)
    run_case("chain_f16_d64_full", "f16", False, 200, 300, 5, 64, 64, b=3, h=5, scale=-0.5,
             softmax=False)
    run_case("chain_bf16_d128_causal", "bf16", True, 300, 200, 2, 128, 128, b=3, h=6,
             scale=0.02, softmax=False)


def test_chain_ragged():
    """Ragged sizes on the default chain kernels (sanitize.sh may run this too)."""
    for dtype, d, causal in itertools.product(["f16", "bf16"], [64, 128], [False, True]):
        for (s, l), hk in [((1, 1), 4), ((17, 203), 2), ((203, 17), 1), ((129, 65), 4)]:
            run_case(chain_name("chain", dtype, d, causal), dtype, causal, s, l, hk, d, d, b=2,
                     scale=-0.3, softmax=False)


def post_matrix(dtype, d):
    """A scaling of the probabilities after the softmax (folded into the final division),
    default tiles, every size and head mode."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        run_case(chain_name("post", dtype, d, causal), dtype, causal, s, l, hk, d, d, gain=0.75)


def test_post_scale_f16_d64():
    post_matrix("f16", 64)


def test_post_scale_f16_d128():
    post_matrix("f16", 128)


def test_post_scale_bf16_d64():
    post_matrix("bf16", 64)


def test_post_scale_bf16_d128():
    post_matrix("bf16", 128)


def test_post_scale_other():
    """Other gains (negative, 0, larger than 1: errors measured in units of |gain|) and the
    mma.sync tiles."""
    for causal, (s, l) in itertools.product([False, True], SIZES):
        run_case(chain_name("post", "f16", 64, causal, "_sync"), "f16", causal, s, l, 2, 64, 64,
                 gain=-1.5)
    run_case("post_bf16_d128_causal", "bf16", True, 203, 17, 1, 128, 128, b=2, scale=-0.3,
             gain=3.0)
    run_case("post_f16_d64_full", "f16", False, 129, 65, 4, 64, 64, b=2, gain=0.0)


def test_chain_rejects_bad_sizes():
    """L = 0 is refused (the loop over the keys runs at least once), as a misaligned
    tensor: cudaErrorInvalidValue (1), nothing launched, the output stays NaN."""
    t = torch.float16
    for name in ("chain_f16_d64_full", "chain_f16_d64_sync_full", "chain_f16_d128_causal"):
        d = 128 if "d128" in name else 64
        call = sketch_gpu.kernel(name)
        q = torch.randn(1, 2, 16, d, device="cuda", dtype=t)
        o = torch.full_like(q, float("nan"))
        k0 = torch.randn(1, 2, 0, d, device="cuda", dtype=t)
        assert call(Q=q, K=k0, V=k0, O=o, scale=0.1, B=1, H=2, S=16, HK=2, L=0) == 1
        storage = torch.randn(2 * 16 * d + 8, device="cuda", dtype=t)
        shifted = storage[1:1 + 2 * 16 * d].view(1, 2, 16, d)
        assert call(Q=q, K=shifted, V=q, O=o, scale=0.1, B=1, H=2, S=16, HK=2, L=16) == 1
        torch.cuda.synchronize()
        assert torch.isnan(o.float()).all()


# Statements on the scores beyond scaling (issue 15), attention_steps.sketch.
def softcap_case(name, dtype, causal, s, l, hk, d, cap, **kw):
    """softmax(cap * tanh(Q K^T * scale / cap)) V: Gemma 2's soft-capping."""
    run_case(name, dtype, causal, s, l, hk, d, d, scalars={"cap": cap},
             steps=lambda x: torch.tanh(x / cap) * cap, **kw)


def relu_case(name, dtype, causal, s, l, hk, d, **kw):
    """relu(Q K^T * scale) V over every key (no softmax; masked scores 0)."""
    run_case(name, dtype, causal, s, l, hk, d, d, softmax=False, steps=torch.relu, **kw)


def test_softcap_default():
    """Default tiles (the sm_90a kernel under ARCH=sm_90a), every size and head mode;
    a cap of 2 bends most scaled scores (|x| about 1), so the tanh is exercised."""
    for dtype, d in [("f16", 64), ("f16", 128), ("bf16", 64), ("bf16", 128)]:
        for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
            softcap_case(chain_name("softcap", dtype, d, causal), dtype, causal, s, l, hk, d,
                         2.0)


def test_softcap_mma_sync():
    """The mma.sync kernel, other caps and scales (a large scale saturates the tanh)."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        softcap_case(chain_name("softcap", "f16", 64, causal, "_sync"), "f16", causal, s, l, hk,
                     64, 5.0)
    softcap_case("softcap_f16_d64_sync_full", "f16", False, 200, 300, 5, 64, 0.5, b=3, h=5,
                 scale=1.0)
    softcap_case("softcap_bf16_d128_causal", "bf16", True, 300, 200, 2, 128, 30.0, b=3, h=6,
                 scale=0.5)


def test_relu_chain():
    """A looped back-to-back GEMM with a ReLU between its GEMMs, default and mma.sync
    tiles, every size and head mode."""
    for variant, dtype in [("", "f16"), ("", "bf16"), ("_sync", "f16")]:
        for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
            relu_case(chain_name("relu", dtype, 64, causal, variant), dtype, causal, s, l, hk, 64)


def mixed_steps(x):
    return torch.sigmoid(x) * 4 + torch.exp(x / 4) - torch.nn.functional.silu(x) / (x * x + 1)


def test_mixed_steps():
    """exp, sigmoid and silu of the scores (their fast forms) and a division by the scores,
    with scores of several sizes (scale 1: |x| up to about 30)."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        run_case(chain_name("mixed", "f16", 64, causal), "f16", causal, s, l, hk, 64, 64,
                 steps=mixed_steps)
    for scale in [1.0, -0.7, 0.01]:
        run_case("mixed_f16_d64_causal", "f16", True, 300, 200, 2, 64, 64, b=2, scale=scale,
                 steps=mixed_steps)


def bias_case(name, dtype, causal, s, l, hk, *, b=2, h=HEADS, **kw):
    """The bias_* kernels: random tensors added to the scores, broadcast by symbol."""
    t = sketch_gpu.DTYPES[dtype]
    rand = lambda *shape, dt=torch.float32: torch.randn(*shape, device="cuda", dtype=dt)  # noqa: E731
    if name.startswith("bias_bf16_d128"):
        rb, qb = rand(b, h, s, l, dt=t), rand(s)
        run_case(name, dtype, causal, s, l, hk, 128, 128, b=b, h=h, scalars={"rb": rb, "qb": qb},
                 steps=lambda x: x - rb.float() * qb[:, None], **kw)
    elif "_sync" in name:
        m = rand(s, l)
        run_case(name, dtype, causal, s, l, hk, 64, 64, b=b, h=h, scalars={"M": m},
                 steps=lambda x: torch.relu(x + m), softmax=False, **kw)
    else:  # the full kernel reads kb and hb, the causal one M too
        m, kb, hb = rand(s, l) if causal else 0.0, rand(l, dt=t), rand(h, s, l)
        run_case(name, dtype, causal, s, l, hk, 64, 64, b=b, h=h,
                 scalars={"M": m, "kb": kb, "hb": hb},
                 steps=lambda x: x + m + kb.float() + 0.5 * hb, **kw)


def test_tensor_steps():
    """Every (S, L) and head mode, each bias kernel (default tiles, the mma.sync one)."""
    for causal, (s, l), hk in itertools.product([False, True], SIZES, MODES.values()):
        b = 1 if max(s, l) > 1024 else 2
        bias_case(chain_name("bias", "f16", 64, causal), "f16", causal, s, l, hk, b=b)
        if not causal:
            bias_case("bias_bf16_d128_full", "bf16", False, s, l, hk, b=b)
        else:
            bias_case("bias_f16_d64_sync_causal", "f16", True, s, l, hk, b=b)


def test_steps_keys_by_column():
    """K stored [D, L] with a function and a tensor on the scores: the TMA kernel (L a
    multiple of 8) and its mma.sync fallback (other L), every size and head mode."""
    for (s, l), hk in itertools.product(SIZES + [(200, 200), (129, 1000)], MODES.values()):
        m = torch.randn(s, l, device="cuda")
        run_case("kcsteps_f16_d128_causal", "f16", True, s, l, hk, 128, 128, b=2,
                 key_rows=False, scalars={"M": m, "cap": 3.0},
                 steps=lambda x: torch.tanh(x / 3.0) * 3.0 + m)


def test_padding_mask():
    """A [B, 1, 1, L] additive padding mask: batch 1 sees the first half of its keys (-inf
    past them), batch 0 all of them, its first with a bias of -3; every size and head mode."""
    for (s, l), hk in itertools.product(SIZES, MODES.values()):
        b = 2
        pm = torch.zeros(b, 1, 1, l, device="cuda")
        pm[1, :, :, (l + 1) // 2:] = float("-inf")  # batch 1 sees its first half of the keys
        pm[0, :, :, 0] = -3.0                       # and a finite bias
        run_case("padmask_f16_d128_full", "f16", False, s, l, hk, 128, 128, b=b,
                 scalars={"pm": pm}, steps=lambda x: x + pm)


def staged_case(name, causal, s, l, hk, *, b=2, misaligned=False):
    """The staged_* kernels: M [S, L] f16 added, and by staged_f16_d128_causal hm [H, S, L]
    f16 added, by staged_f16_d64_full um [B, 1, S, L] bf16 subtracted, by
    staged_f16_d256_two_full N2 [S, L] f16 added (loaded with guards: one tile a stage fits
    beside d = 256's; the others read M alone); `misaligned`: M 2 bytes past a 16-byte
    boundary (the fallback kernel)."""
    d = 128 if "d128" in name else 256 if "d256" in name else 64
    m = torch.randn(s * l + 8, device="cuda", dtype=torch.float16)
    m = (m[1:1 + s * l] if misaligned else m[:s * l]).view(s, l)
    scalars, other = {"M": m}, 0.0
    if name == "staged_f16_d128_causal":
        scalars["hm"] = other = torch.randn(HEADS, s, l, device="cuda", dtype=torch.float16)
    elif name == "staged_f16_d64_full":
        um = torch.randn(b, 1, s, l, device="cuda", dtype=torch.bfloat16)
        scalars["um"], other = um, -um.float()
    elif name == "staged_f16_d256_two_full":
        scalars["N2"] = other = torch.randn(s, l, device="cuda", dtype=torch.float16)
    run_case(name, "f16", causal, s, l, hk, d, d, b=b, scalars=scalars,
             steps=lambda x: x + m.float() + other)


def test_staged_tensors():
    """Tensors copied by TMA with each key tile: every (S, L) and head mode (L not a
    multiple of 8 takes the mma.sync fallback), and a misaligned M (the fallback too)."""
    for (s, l), hk in itertools.product(SIZES + [(200, 200), (129, 1000)], MODES.values()):
        b = 1 if max(s, l) > 1024 else 2
        staged_case("staged_f16_d64_full", False, s, l, hk, b=b)
        staged_case("staged_f16_d128_causal", True, s, l, hk, b=b)
    for name, causal in [("staged_f16_d64_full", False), ("staged_f16_d128_causal", True)]:
        staged_case(name, causal, 256, 512, 2, misaligned=True)
    for (s, l), hk in itertools.product([(1, 8), (113, 200), (256, 512), (1000, 1024), (17, 17)],
                                        MODES.values()):
        staged_case("staged_f16_d64_wide_full", False, s, l, hk)
        staged_case("staged_f16_d256_full", False, s, l, hk)
        staged_case("staged_f16_d256_two_full", False, s, l, hk)


def test_steps_ragged():
    """Ragged sizes on the statement kernels (sanitize.sh runs this)."""
    for causal in [False, True]:
        for (s, l), hk in [((1, 1), 4), ((17, 203), 2), ((203, 17), 1), ((129, 65), 4)]:
            softcap_case(chain_name("softcap", "f16", 64, causal), "f16", causal, s, l, hk, 64,
                         2.0, b=2)
            softcap_case(chain_name("softcap", "bf16", 128, causal), "bf16", causal, s, l, hk,
                         128, 2.0, b=2)
            relu_case(chain_name("relu", "f16", 64, causal), "f16", causal, s, l, hk, 64, b=2,
                      scale=-0.3)
            bias_case(chain_name("bias", "f16", 64, causal), "f16", causal, s, l, hk)
        for (s, l), hk in [((1, 8), 4), ((17, 200), 2), ((203, 24), 1), ((129, 64), 4)]:
            staged_case(f"staged_f16_{'d128_causal' if causal else 'd64_full'}", causal, s, l, hk)
