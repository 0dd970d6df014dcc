#!/usr/bin/env python3
"""Every benchmark in one run: GEMM, GEMM+bias+ReLU, LLM projections, b2b, convolution, SIMT SGEMM, attention.

Run by `bench/run.sh --all` on the GPU machine (after bench/generate.sh here),
which builds .gen/bench into one library. Each module keeps its own cases,
checks and timing (bench.py: GEMM and GEMM+bias+ReLU against cuBLAS /
cuBLASLt; bench_b2b.py: back-to-back GEMMs against torch's unfused chain;
bench_conv.py: ResNet-50 convolutions against cuDNN and the SIMT SGEMM against
cuBLAS; bench_conv_b2b.py: back-to-back convolutions against two cuDNN convolutions; bench_attention.py: attention against torch SDPA's flash backend;
bench_projections.py: Y = X W^T at LLM projection shapes against cuBLAS, and at sizes
whose N is not a multiple of 8, the odd_sizes group);
this script calls them in turn, in one process, and gathers their rows into
one table. The GEMM, convolution and attention rows' library and our default and best are
timed once more in alternating batches (bench_common.head_to_head), which
gives them the same clocks; those times are reported:

  workload | ours (best configuration), median ms | library, median ms (same run)
  | TFLOP/s both | our achieved bandwidth (minimum bytes / time) | ratio = library / ours

It appends the table, with the device, date, commit and versions, to
bench/RESULTS.md (and $OUT/RESULTS.md), and draws the ratios as a bar chart
into bench/ratios.png (and $OUT/ratios.png): matplotlib when it is
installed, else a small built-in PNG writer (bars only, in table order).
Each group's geometric mean ratio follows the table (the projections group's
per-row summary too). --only gemm,projections,odd_sizes,b2b,conv,attention runs some groups.
"""
import argparse
import functools
import datetime
import math
import os
import struct
import sys
import time
import zlib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
import bench_common  # noqa: E402
import sketch_gpu  # noqa: E402

GROUPS = ["gemm", "projections", "odd_sizes", "b2b", "conv", "attention"]
NOTES = [
    "Triton's matmul is not in the table: triton.ops (its packaged matmul) is gone from "
    "Triton 3.x, and a hand-written Triton kernel would be ours, not a library's.",
    "Convolution and attention rows: each side's time is the lower of its eager calls and "
    "its CUDA-graph replays (a decoding row's kernels take 20-50 us, about a call from "
    "Python); times under 0.1 ms have four decimals.",
    "Bandwidth counts the minimum bytes (each input read once, the output written once); "
    "GEMMs and attention are compute-bound, so it is informative only for b2b and small "
    "convolutions.",
]


RESULTS_HEADER = """# Benchmark results

The latest full run of `bash bench/run.sh --all` (on the GPU machine, after
`test/gpu/generate.sh && bench/generate.sh` here): every benchmark against the
library a user would otherwise call, timed in the same process. Earlier runs are
in git's history of this file (`git log -p bench/RESULTS.md`).
"""


class Table:
    """Rows of all modules: the modules' 8-tuples plus the group and minimum bytes."""

    def __init__(self):
        self.rows, self.detail = [], []

    def run(self, group, nbytes, case, *args):
        """Runs case(*args, rows, detail) and labels the rows it added, each with the
        default configuration's (name, ms) from the detail the case added."""
        module_rows, first = [], len(self.detail)
        case(*args, module_rows, self.detail)
        defaults = [d for d in self.detail[first:] if d[0].endswith("_default")]
        for row in module_rows:
            default = default_for(row[1], defaults)
            self.rows.append((group, nbytes) + tuple(row) + (default[0], default[2]) if default
                             else (group, nbytes) + tuple(row) + (None, float("nan")))


def default_for(best_name, defaults):
    """The `*_default` kernel's detail entry that belongs with the row whose best configuration
    is `best_name`: the only one, or the one whose stem is the longest prefix of that name
    (bg_f16_mma_default for bg_f16_mma_128x256x32_w8_s3, not bg_f16_default)."""
    if len(defaults) <= 1 or best_name is None:
        return defaults[0] if len(defaults) == 1 else None
    stems = [(d[0][:-len("default")], d) for d in defaults]
    matching = [(len(stem), d) for stem, d in stems if best_name.startswith(stem)]
    return max(matching, key=lambda m: m[0])[1] if matching else None


def gemm_group(table, quick):
    import bench
    elem = {"f16": 2, "bf16": 2, "f32": 4}
    for dtype_name in ["f16", "bf16"]:
        for size in [4096] + ([] if quick else [8192]):
            table.run("gemm", elem[dtype_name] * 3 * size * size, bench.gemm_case, dtype_name, size)
    table.run("gemm", 4 * 3 * 4096 * 4096, bench.gemm_case, "f32", 4096)
    if not quick:
        m, n, k = 8192, 4096, 4096
        for activation in bench.BIAS_ACTIVATIONS:
            table.run("gemm", 2 * (m * k + k * n + m * n + n), bench.bias_activation_case, activation)


def projections_group(table):
    import bench_projections
    for t, m, n, k in bench_projections.cases():
        table.run("projections", bench_projections.min_bytes(m, n, k),
                  bench_projections.projection_case, t, m, n, k)


# Projections whose N is not a multiple of 8 (a vocabulary of 50257: GPT-2's LM head) and
# one ragged square: the output's rows are not whole 16-byte chunks (kernel<true, false>);
# an odd K: the operands' rows are not either (the element path, kernel<false>).
ODD_SIZES = [(1, 50257, 768), (128, 50257, 768), (4096, 50257, 768), (4096, 4097, 4096),
             (4096, 4096, 4097)]


def odd_sizes_group(table):
    import bench_projections
    for m, n, k in ODD_SIZES:
        table.run("odd_sizes", bench_projections.min_bytes(m, n, k),
                  bench_projections.projection_case, "bf16", m, n, k)


def b2b_group(table):
    import bench_b2b
    copy_bw = bench_b2b.copy_bandwidth()
    print(f"device-to-device copy bandwidth: {copy_bw / 1e9:.0f} GB/s", flush=True)
    for shape, (m, k0, n0, n1) in bench_b2b.SHAPES.items():
        kernels = bench_b2b.harness_kernels(shape)
        if not kernels:
            print(f"b2b {shape}: no kernels in the library, skipped", flush=True)
            continue
        nbytes = 2 * (m * k0 + k0 * n0 + n0 * n1 + 2 * m * n1)
        table.run("b2b", nbytes, lambda rows, detail: bench_b2b.bench_shape(
            shape, kernels, copy_bw, rows, detail))
    return copy_bw


def conv_group(table):
    import bench_conv
    torch.backends.cudnn.benchmark = True
    table.run("conv", 4 * 3 * 4096 * 4096, bench_conv.sgemm_case)
    # sizes that are not multiples of 4: the scalar kernel (element copies, any alignment)
    table.run("conv", 4 * 3 * 4095 * 4095,
              lambda rows, detail: bench_conv.sgemm_case(rows, detail, n=4095))
    n = bench_conv.BATCH
    for dtype_name, elem in [("f16", 2), ("bf16", 2), ("f32", 4), ("f32nhwc", 4)]:
        for layer in bench_conv.LAYERS:
            c, hw, k, r, stride, pad = layer
            p = (hw + 2 * pad - r) // stride + 1
            nbytes = elem * (n * c * hw * hw + k * c * r * r + n * k * p * p)
            table.run("conv", nbytes, bench_conv.conv_case, dtype_name, layer)
    import bench_conv_b2b  # back-to-back convolutions against two cuDNN convolutions
    for shape, (c, hw, k0, r, stride, pad, k1) in bench_conv_b2b.SHAPES.items():
        p = (hw + 2 * pad - r) // stride + 1
        n = bench_conv_b2b.BATCH
        nbytes = 2 * (n * c * hw * hw + k0 * c * r * r + k0 + k1 * k0 + n * k1 * p * p)
        table.run("conv", nbytes, bench_conv_b2b.conv_b2b_case, shape)


def attention_case(b, h, hk, s, d, causal, rows, detail, key_columns=False, keys=None):
    """One attention shape (`hk` key/value heads: grouped-query, None: as many as `h`): our f16 kernels (the
    listed configuration and the default) vs torch SDPA's cuDNN and flash backends, one
    row each. key_columns: our kernel reads K and V stored [D, L] (attn_*_kvcols_*);
    keys: L where it is not S (decoding: a few query rows over many keys)."""
    import bench_attention
    from torch.nn.attention import SDPBackend
    form = "gqa" if hk else "kvcols" if key_columns else "mha"
    listed = f"attn_f16_d{d}_{form}_{'causal' if causal else 'full'}"
    l = keys or s
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.float16)
    k, v = (torch.randn(b, hk or h, l, d, device="cuda", dtype=torch.float16) for _ in range(2))
    o = torch.full_like(q, float("nan"))
    flops = 4 * b * h * s * l * d * (0.5 if causal else 1.0)
    tflops = lambda ms: flops / (ms * 1e-3) / 1e12
    label = (f"f16 attention B={b} H={h}{f' HK={hk}' if hk else ''} S={s}"
             f"{f' L={l}' if l != s else ''} D={d}"
             f"{' causal' if causal else ''}{', K and V stored [D, L]' if key_columns else ''}")
    libraries, library_runs, contenders = {}, {}, bench_common.Contenders()
    # grouped K/V: SDPA on heads repeated beforehand, and with enable_gqa where the backend
    # takes it (each its own row)
    kk, vv = (k, v) if not hk else (t.repeat_interleave(h // hk, dim=1) for t in (k, v))
    backends = [(SDPBackend.CUDNN_ATTENTION, "torch SDPA cuDNN"),
                (SDPBackend.FLASH_ATTENTION, "torch SDPA flash")]
    forms = [(backend, what, False) for backend, what in backends]
    if hk:
        forms += [(backend, what + ", enable_gqa", True) for backend, what in backends]
    reference = None
    for backend, what, gqa in forms:
        try:
            fn = (bench_attention.torch_sdpa(backend, q, k, v, causal, gqa=True) if gqa
                  else bench_attention.torch_sdpa(backend, q, kk, vv, causal))
            out = fn().float()
            reference = out if reference is None else reference
            libraries[what] = bench_attention.time_ms(fn)
            if not math.isnan(libraries[what]):
                library_runs[what] = fn
        except RuntimeError as error:  # a backend that does not take this shape
            print(f"  {what}: {error}", flush=True)
    best = (float("nan"), None)
    # the default, the mma.sync configuration and the listed sm_90a tiles (bench/attention/attn_tiles.sketch)
    tiles = sorted(p for p in sketch_gpu.prototypes() if p.startswith(listed + "_t"))
    for name in [listed + "_default", listed] + tiles:
        if name not in sketch_gpu.prototypes():
            continue
        o.fill_(float("nan"))
        if hk:
            call = sketch_gpu.kernel(name)
            # call bound now: head_to_head runs this after the loop has moved on
            run = lambda call=call: call(Q=q, K=k, V=v, O=o, scale=1.0 / math.sqrt(d), B=b,
                                         H=h, S=s, HK=hk, L=l)  # noqa: E731
        else:
            kc, vc = (t.transpose(-1, -2).contiguous() for t in (k, v)) if key_columns else (k, v)
            run = bench_attention.ours(sketch_gpu.library(), name, q, kc, vc, o,
                                       1.0 / math.sqrt(d), keys=l)
        status = run()
        torch.cuda.synchronize()
        err = ((o.float() - reference).norm() / reference.norm()).item()
        ms = float("nan")
        if status == 0 and err < 1e-2:
            ms = bench_attention.time_ms(run)
            detail.append((name, label, ms, tflops(ms), err))
            contenders.add(name, run, ms)
            if best[1] is None or ms < best[0]:
                best = (ms, name)
        print(f"  {name}: status {status}, rel err {err:.1e}, {ms:.3f} ms", flush=True)
    if contenders.runs and library_runs:
        # the libraries, our default and our best again in alternating batches (the same clocks)
        times, best = bench_common.head_to_head(
            {w: (lambda i, f=f: f()) for w, f in library_runs.items()},
            {n: (lambda i, r=r: r()) for n, r in contenders.runs.items()}, 1, detail, graph="best")
        libraries.update(times)
    print(f"{label}: " + ", ".join(f"{w} {t:.3f} ms" for w, t in libraries.items()), flush=True)
    for what, lib_ms in libraries.items():
        rows.append((label, best[1], best[0], tflops(best[0]) if best[1] else float("nan"), what,
                     lib_ms, tflops(lib_ms), None))  # no target was set for attention
    del q, k, v, o, kk, vv
    torch.cuda.empty_cache()


def softcap_case(b, h, s, d, causal, rows, detail, cap=30.0):
    """Soft-capped attention (Gemma 2: softmax(cap * tanh(Q K^T * scale / cap)) V), our
    default kernel vs FlexAttention (torch.compile'd flex_attention with the same score_mod
    and, causal, a block mask): the library a PyTorch user would call, since SDPA has no
    soft-capping. Large random scores (scale 1) so that the tanh bends them."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    scale = 1.0 / math.sqrt(d) * 4.0
    flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
    tflops = lambda ms: flops / (ms * 1e-3) / 1e12
    label = f"f16 attention softcap {cap:g} B={b} H={h} S={s} D={d}{' causal' if causal else ''}"
    score_mod = lambda score, bi, hi, qi, ki: torch.tanh(score / cap) * cap  # noqa: E731
    mask = (create_block_mask(lambda bi, hi, qi, ki: qi >= ki, None, None, s, s)
            if causal else None)
    flex = torch.compile(flex_attention)
    library = lambda: flex(q, k, v, score_mod=score_mod, block_mask=mask, scale=scale)  # noqa: E731
    reference = library().float()
    name = f"attn_f16_d{d}_softcap_{'causal' if causal else 'full'}_default"
    call = sketch_gpu.kernel(name)
    run = lambda: call(Q=q, K=k, V=v, O=o, scale=scale, cap=cap, B=b, H=h, S=s, L=s)  # noqa: E731
    checked_against(name, label, run, o, reference, {"torch FlexAttention (compiled)": library},
                    tflops, rows, detail)
    del q, k, v, o
    torch.cuda.empty_cache()


def checked_against(name, label, run, out, reference, libraries, tflops, rows, detail):
    """Our kernel `name` (run(), writing `out`) checked against `reference` (relative error
    under 1e-2), then timed head to head with the libraries ({label: run()}): a row each."""
    status = run()
    torch.cuda.synchronize()
    err = ((out.float() - reference).norm() / reference.norm()).item()
    print(f"  {name}: status {status}, rel err {err:.1e}", flush=True)
    if status != 0 or not err < 1e-2:
        return
    times, best = bench_common.head_to_head({w: (lambda i, f=f: f()) for w, f in libraries.items()},
                                            {name: lambda i: run()}, 1, detail)
    detail.append((name, label, best[0], tflops(best[0]), err))
    for what, lib_ms in times.items():
        rows.append((label, name, best[0], tflops(best[0]), what, lib_ms, tflops(lib_ms), None))


def mask_case(b, h, s, d, rows, detail):
    """Attention with an additive mask [S, L] in f16 (an ALiBi-like slope plus a random
    block pattern): our default kernel vs SDPA with the same attn_mask, on each backend
    that takes one (cuDNN, memory-efficient)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    idx = torch.arange(s, device="cuda")
    mask = (-0.01 * (idx[:, None] - idx[None, :]).abs().float()
            - 4.0 * (torch.rand(s // 64, s // 64, device="cuda") < 0.2).float()
            .repeat_interleave(64, 0).repeat_interleave(64, 1)).half()
    scale = 1.0 / math.sqrt(d)
    flops = 4 * b * h * s * s * d
    tflops = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
    label = f"f16 attention + mask [S, L] B={b} H={h} S={s} D={d}"
    libraries = {}
    for backend, what in [(SDPBackend.CUDNN_ATTENTION, "torch SDPA cuDNN, attn_mask"),
                          (SDPBackend.EFFICIENT_ATTENTION, "torch SDPA efficient, attn_mask")]:
        def run_library(backend=backend):
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        try:
            reference = run_library().float()
            libraries[what] = run_library
        except RuntimeError as error:  # a backend that does not take this mask
            print(f"  {what}: {str(error).splitlines()[0]}", flush=True)
    if not libraries:
        return
    name = f"attn_f16_d{d}_bias_full_default"
    call = sketch_gpu.kernel(name)
    run = lambda: call(Q=q, K=k, V=v, O=o, scale=scale, M=mask, B=b, H=h, S=s, L=s)  # noqa: E731
    checked_against(name, label, run, o, reference, libraries, tflops, rows, detail)
    del q, k, v, o, mask
    torch.cuda.empty_cache()


def attention_group(table):
    import bench_attention
    for b, h, s, d, causal in bench_attention.SHAPES:
        table.run("attention", 2 * 4 * b * h * s * d, attention_case, b, h, None, s, d, causal)
    for b, h, hk, s, d, causal in bench_attention.GQA_SHAPES:
        table.run("attention", 2 * b * s * d * (2 * h + 2 * hk), attention_case, b, h, hk, s,
                  d, causal)
    for b, h, hk, s, l, d in bench_attention.DECODE_SHAPES:
        table.run("attention", 2 * b * d * (2 * h * s + 2 * hk * l),
                  functools.partial(attention_case, keys=l), b, h, hk, s, d, False)
    for b, h, s, d, causal in bench_attention.KEY_COLUMN_SHAPES:
        table.run("attention", 2 * 4 * b * h * s * d,
                  functools.partial(attention_case, key_columns=True), b, h, None, s, d, causal)
    for causal in [False, True]:
        table.run("attention", 2 * 4 * 4 * 16 * 4096 * 128, softcap_case, 4, 16, 4096, 128, causal)
    for d in (128, 64):
        table.run("attention", 2 * 4 * 4 * 16 * 4096 * d + 2 * 4096 * 4096, mask_case, 4, 16,
                  4096, d)


def fmt(x, spec):
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def ms_spec(ms):
    """Times under 0.1 ms get a fourth decimal (0.0152 against 0.0158 ms would both read 0.016)."""
    return ".4f" if ms is not None and ms < 0.1 else ".3f"


def ratio_of(row, best=False):
    """Library time / ours: the default configuration's, or with best=True the best listed."""
    _, _, _, name, ms, _, _, lib_ms, _, _, default, default_ms = row
    if not best:
        name, ms = default, default_ms
    return lib_ms / ms if name and math.isfinite(ms) and ms > 0 else None


def markdown(table, commit, copy_bw):
    device = torch.cuda.get_device_name()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"\n## All benchmarks: {date}, {device}, commit {commit}\n",
             f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
             f"{torch.backends.cudnn.version()}; TF32 off. One process: ours and the library "
             "timed in the same run (medians; the GEMM, convolution and attention rows' library, "
             "default and best again in alternating batches, which gives them the same clocks). "
             "Ratio = library time / our time (> 1: we are faster). Chart: ratios.png (bars "
             "in table order)."
             + (f" Device-to-device copy: {copy_bw / 1e9:.0f} GB/s." if copy_bw else "") + "\n",
             "\"Ours\" is the kernel sketchc generates with no directives (the `*_default` "
             "sketches); the best listed configuration stands beside it. Ratios and targets are "
             "the default's.\n",
             "| # | group | workload | ours (default) ms | TFLOP/s | GB/s | best listed configuration "
             "| ms | ratio | library | ms | TFLOP/s | ratio (default) | target | met |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i, row in enumerate(table.rows, 1):
        group, nbytes, label, name, ms, tf, lib, lib_ms, lib_tf, target, default, dms = row
        ratio, best_ratio = ratio_of(row), ratio_of(row, best=True)
        dtf = tf * ms / dms if ratio is not None and name else None
        gbs = nbytes / (dms * 1e-3) / 1e9 if ratio is not None else None
        met = "" if target is None else "yes" if ratio is not None and ratio >= target else "no"
        lines.append(f"| {i} | {group} | {label} | "
                     f"{fmt(dms, ms_spec(dms)) if ratio is not None else '(no default kernel)'} | "
                     f"{fmt(dtf, '.1f')} | {fmt(gbs, '.0f')} | {name or '(no correct kernel)'} | "
                     f"{fmt(ms if name else None, ms_spec(ms))} | "
                     f"{fmt(best_ratio, '.2f')}{'x' if best_ratio else ''} | {lib} | "
                     f"{fmt(lib_ms, ms_spec(lib_ms))} | {lib_tf:.1f} | {fmt(ratio, '.2f')}{'x' if ratio else ''} | "
                     f"{'' if target is None else f'>= {target:.2f}x'} | {met} |")
    lines += [""] + [f"- {note}" for note in NOTES] + [""] + geomeans(table)
    lines += projections_summary(table)
    lines += ["", "<details><summary>every configuration</summary>", "",
              "| kernel | case | ms | TFLOP/s | rel. error |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {n} | {c} | {fmt(ms, ms_spec(ms))} | {tf:.1f} | {e:.1e} |"
              for n, c, ms, tf, e in table.detail]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def geomeans(table):
    """One line per group: the geometric means of its rows' ratios (default, best listed)."""
    lines = []
    for group in dict.fromkeys(row[0] for row in table.rows):
        rows = [row for row in table.rows if row[0] == group]
        default, best = geomean([ratio_of(r) for r in rows]), geomean([ratio_of(r, True) for r in rows])
        lines.append(f"- {group}: geometric mean ratio {fmt(default, '.3f')}x (default), "
                     f"{fmt(best, '.3f')}x (best listed), over {len(rows)} rows")
    return lines


def projections_summary(table):
    """The projections group's per-row summary (bench_projections.summary), when it ran."""
    rows = [row for row in table.rows if row[0] == "projections"]
    if not rows:
        return []
    import bench_projections
    results = [(r[2], r[11], r[3], r[4], r[7]) for r in rows]
    return ["", "### LLM projections: the default beside the best listed configuration", "",
            bench_projections.summary(results)]


def png_bytes(width, height, pixels):
    """A truecolor PNG from rows of (r, g, b) tuples."""
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


def draw_plain(path, labels, ratios, targets):
    """Horizontal bars, one per row in table order: green when the target is met, red
    when not, grey with no target; black line at 1.0x, blue ticks at each row's target,
    grid every 0.5x."""
    bar, gap, left, scale = 14, 6, 10, 300  # scale: pixels per 1.0x
    top = max([r for r in ratios if r] + [t for t in targets if t] + [1.0]) + 0.25
    width, height = left + int(top * scale) + 10, gap + len(ratios) * (bar + gap)
    pixels = [[(255, 255, 255)] * width for _ in range(height)]
    for x in range(left, width, scale // 2):
        for y in range(height):
            pixels[y][x] = (225, 225, 225)
    for i, (ratio, target) in enumerate(zip(ratios, targets)):
        y0 = gap + i * (bar + gap)
        color = ((200, 200, 200) if ratio is None else (120, 120, 120) if target is None
                 else (60, 160, 60) if ratio >= target else (210, 60, 50))
        for y in range(y0, y0 + bar):
            for x in range(left, left + int((ratio or 0.05) * scale)):
                pixels[y][x] = color
            for x in range(left + int((target or 0) * scale) - 1, left + int((target or 0) * scale) + 1):
                if target:
                    pixels[y][x] = (40, 80, 220)
    for y in range(height):
        pixels[y][left + scale] = (0, 0, 0)
    with open(path, "wb") as f:
        f.write(png_bytes(width, height, pixels))


def draw_matplotlib(path, labels, ratios, targets):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(labels) + 1.2))
    ys = range(len(labels))[::-1]
    colors = ["#bbbbbb" if r is None else "#808080" if t is None else "#3ca03c" if r >= t
              else "#d23c32" for r, t in zip(ratios, targets)]
    ax.barh(list(ys), [r or 0 for r in ratios], color=colors)
    marks = [(t, y) for t, y in zip(targets, ys) if t is not None]
    ax.scatter([t for t, _ in marks], [y for _, y in marks], marker="|", color="#2850dc", s=150,
               label="target")
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(list(ys), labels, fontsize=7)
    ax.set_xlabel("library time / our time (> 1: ours faster)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def draw_chart(table, paths):
    labels = [f"{i}. {row[2]} vs {row[6]}" for i, row in enumerate(table.rows, 1)]  # default's ratio
    ratios = [ratio_of(row) for row in table.rows]
    targets = [row[9] for row in table.rows]
    try:
        draw, how = draw_matplotlib, "matplotlib"
        import matplotlib  # noqa: F401
    except ImportError:
        draw, how = draw_plain, "the built-in PNG writer (no labels: bars in table order)"
    for path in paths:
        draw(path, labels, ratios, targets)
    print(f"chart: {', '.join(paths)} ({how})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    parser.add_argument("--chart", default=os.path.join(HERE, "ratios.png"))
    parser.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups")
    parser.add_argument("--quick", action="store_true", help="GEMM: 4096 only")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    table, copy_bw = Table(), None
    groups = args.only.split(",")
    for group in GROUPS:
        if group not in groups:
            continue
        print(f"\n=== {group} ===", flush=True)
        started = time.monotonic()
        try:
            if group == "gemm":
                gemm_group(table, args.quick)
            elif group == "projections":
                projections_group(table)
            elif group == "odd_sizes":
                odd_sizes_group(table)
            elif group == "b2b":
                copy_bw = b2b_group(table)
            elif group == "conv":
                conv_group(table)
            else:
                attention_group(table)
        except Exception as error:  # one module's failure must not lose the others' rows
            print(f"{group}: FAILED: {type(error).__name__}: {error}", flush=True)
        # bench/run.sh --all must fit one device call (600 s): each group's share
        print(f"=== {group}: {time.monotonic() - started:.0f} s", flush=True)
    text = markdown(table, args.commit, copy_bw)
    print(text)
    out = os.environ.get("OUT")
    # The file holds the latest full run only (bench/run.sh --all appends the decoder layer and
    # the mma.sync ceiling of the same run); git keeps the earlier ones.
    for path in [args.results] + ([os.path.join(out, "RESULTS.md")] if out else []):
        with open(path, "w") as f:
            f.write(RESULTS_HEADER + text)
    if table.rows:
        draw_chart(table, [args.chart] + ([os.path.join(out, "ratios.png")] if out else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
