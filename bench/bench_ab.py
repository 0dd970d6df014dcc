"""Same-run A/B of two compilers' kernels: every generated GEMM, projection, convolution or attention kernel
NAME that has a twin NAME_ab (the same sketch compiled by another sketchc and renamed,
see bench/ab.sh) is timed against the twin and the library in alternating batches
(bench_common.time_interleaved_ms: the same clocks), for several rounds, after both
outputs are checked against the library's (projection rows by CUDA-graph replay, as
bench_projections.py times them). Prints one line a round and case. Use --graph for kernels
under about 50 us: eager calls from Python timed two identical 0.01-0.03 ms attention kernels
up to 11% apart (2026-11-30).

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... python3 bench/bench_ab.py [--rounds 3]
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
import sketch_gpu  # noqa: E402
from bench_common import rel_error, time_interleaved_ms  # noqa: E402
from bench import input_sets  # noqa: E402
from bench_conv import BATCH, LAYERS  # noqa: E402
from bench_projections import cases as projection_shapes  # noqa: E402
from bench_projections import input_sets as projection_inputs  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def gemm_cases(name):
    """(label, library run, kernel run builder, reference, out, sets) for a bg_, bbr_ (bias, ReLU)
    or bbg_ (bias, GELU: against torch's erf GELU after cuBLASLt's addmm) kernel, or an f32
    output's bo_ (as bg_) or bog_ (as bbg_) one of bench/labs/gemm_f32_output.sketch (the
    library's 16-bit output cast to f32)."""
    dtype = DTYPES[name.split("_")[1]]
    bias, gelu = name.startswith(("bbr_", "bbg_", "bog_")), name.startswith(("bbg_", "bog_"))
    out_dtype = torch.float32 if name.startswith(("bo_", "bog_")) else dtype
    # (4096, 5632, 2048), the Llama layer's MLP up projection, and (1024, 4864, 2048): 704
    # and 152 tiles of 128 x 256, short last rounds on 132 SMs (the split tail's shapes)
    sizes = [(8192, 4096, 4096)] if bias else [(4096, 4096, 4096), (8192, 8192, 8192),
                                                (4000, 3000, 2000), (4096, 5632, 2048),
                                                (1024, 4864, 2048)]
    for m, n, k in sizes:
        sets = 2 if m >= 8192 else 3
        data = input_sets(m, n, k, dtype, sets, bias=bias)
        out = torch.empty(m, n, device="cuda", dtype=out_dtype)
        if gelu:
            library = lambda i, d=data: torch.nn.functional.gelu(torch.addmm(d[i]["bias"], d[i]["A"], d[i]["B"]))
        elif bias:
            library = lambda i, d=data: torch._addmm_activation(d[i]["bias"], d[i]["A"], d[i]["B"])
        elif out_dtype != dtype:
            library = lambda i, d=data: torch.matmul(d[i]["A"], d[i]["B"]).float()
        else:
            library = lambda i, d=data, o=out: torch.matmul(d[i]["A"], d[i]["B"], out=o)
        ref = library(0).to(out_dtype).clone()

        def ours(call, d=data, o=out, m=m, n=n, k=k):
            return lambda i: call(**d[i], D=o, M=m, N=n, K=k)
        yield f"{name} {m}x{n}x{k}", library, ours, ref, out, sets


def projection_cases(name):
    """The LLM projection rows of bench_projections.py for a bp_ kernel (Y = X W^T)."""
    dtype_name = name.split("_")[1]
    for t, m, n, k in projection_shapes():
        if t != dtype_name:
            continue
        data = projection_inputs(m, n, k, DTYPES[t])
        out = torch.empty(m, n, device="cuda", dtype=DTYPES[t])
        library = lambda i, d=data: torch.matmul(d[i][0], d[i][1].t())
        ref = library(0).clone()

        def ours(call, d=data, o=out, m=m, n=n, k=k):
            return lambda i: call(X=d[i][0], W=d[i][1], Y=o, M=m, N=n, K=k)
        yield f"{name} M={m} N={n} K={k}", library, ours, ref, out, len(data)


def full_read_cases(name):
    """A be_ kernel of bench/labs/epilogue_full_reads.sketch: Y = X W^T + R (torch.addmm) or
    Y = silu(X W^T) * U (torch's three kernels), nn.Linear's W [N, K]."""
    dtype = DTYPES[name.split("_")[1]]
    residual = name.endswith("_residual")
    for m, n, k in [(4096, 2048, 2048), (4096, 2048, 5632), (4096, 5632, 2048),
                    (8192, 4096, 4096), (4000, 3000, 2000), (777, 1003, 515), (77, 2048, 5632)]:
        sets = 2
        data = [(torch.randn(m, k, device="cuda").to(dtype),
                 (torch.randn(n, k, device="cuda") / k ** 0.5).to(dtype),
                 torch.randn(m, n, device="cuda").to(dtype)) for _ in range(sets)]
        if residual:
            library = lambda i, d=data: torch.addmm(d[i][2], d[i][0], d[i][1].t())
        else:
            library = lambda i, d=data: F.silu(d[i][0] @ d[i][1].t()) * d[i][2]
        ref = library(0).clone()
        out = torch.empty_like(ref)

        def ours(call, d=data, o=out, m=m, n=n, k=k):
            tensor = "R" if residual else "U"
            return lambda i: call(X=d[i][0], W=d[i][1], Y=o, M=m, N=n, K=k, **{tensor: d[i][2]})
        yield f"{name} {m}x{n}x{k}", library, ours, ref, out, sets


def conv_cases(name, layers=None, batch=BATCH):
    """bench_conv.py's layers (or `layers`: (C, H = W, K, R = S, stride, pad) each) at `batch`:
    f16 / bf16 kernels nhwc, f32 ones nchw, f32nhwc ones nhwc (as bench_conv_defaults.sketch
    has them)."""
    element = name.split("_")[1]
    dtype = DTYPES[element.removesuffix("nhwc")]
    nchw = element == "f32"
    window = name.split("_")[2]  # s1p1, s1p0, s2p1
    for c, hw, k, r, stride, pad in layers or LAYERS:
        if f"s{stride}p{pad}" != window:
            continue
        sets = 3
        data = []
        for _ in range(sets):
            x = torch.randn(batch, c, hw, hw, device="cuda").to(dtype)
            w = (torch.randn(k, c, r, r, device="cuda") / (c * r * r) ** 0.5).to(dtype)
            data.append((x, w) if nchw else (x.contiguous(memory_format=torch.channels_last),
                                             w.contiguous(memory_format=torch.channels_last)))
        library = lambda i, d=data, s=stride, p=pad: F.conv2d(d[i][0], d[i][1], stride=s, padding=p)
        ref = library(0).clone()
        out = torch.empty_like(ref)

        def ours(call, d=data, o=out, c=c, hw=hw, k=k, r=r):
            if nchw:
                return lambda i: call(X=d[i][0], Wt=d[i][1], Y=o, N=batch, C=c, H=hw, W=hw, K=k,
                                      R=r, S=r)
            return lambda i: call(X=d[i][0].permute(0, 2, 3, 1), Wt=d[i][1].permute(0, 2, 3, 1),
                                  Y=o.permute(0, 2, 3, 1), N=batch, C=c, H=hw, W=hw, K=k, R=r, S=r)
        at = "" if batch == BATCH else f" N{batch}"
        yield f"{name} C{c} {hw}x{hw} K{k} {r}x{r} s{stride}{at}", library, ours, ref, out, sets


# Grids short of the SMs (B, H, HK or None, S, L, D, causal): 64-row tiles fit in one wave of
# 132 SMs but in (1, 32, 8, 512, ...) and (1, 16, None, 1024, ...), which are controls; then
# one causal query row; the last two split the keys as many ways with 64-row tiles as with
# the default's 128 (192 at D = 96) on 132 SMs: the host takes the 64-row kernel at D = 128,
# while D = 96 (three consumer warpgroups a block) keeps its own, the exclusion's control.
SHORT_GRID_SHAPES = [(1, 32, 8, 256, 8192, 128, False), (1, 32, 8, 512, 4096, 128, False),
                     (1, 8, None, 1024, 1024, 128, False), (1, 8, None, 1024, 1024, 128, True),
                     (1, 8, None, 1024, 1024, 64, False), (1, 8, None, 1024, 1024, 64, True),
                     (1, 16, None, 1024, 1024, 128, False), (1, 32, None, 1, 8192, 128, True),
                     (1, 16, None, 256, 4096, 128, False), (1, 2, None, 320, 4096, 96, False)]


def attention_cases(name):
    """bench_attention.py's shapes of an attn_f16_dD_(mha|gqa)_(full|causal)_default kernel
    against torch SDPA's cuDNN backend (the fastest library here; the flash one with a
    bottom-right causal mask where S != L); the grouped-query kernel
    also on the decoding shapes (L keys, not S; causal or not); both on SHORT_GRID_SHAPES."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    from bench_attention import DECODE_SHAPES, GQA_SHAPES, SHAPES, torch_sdpa
    _, _, d_name, form, mask, _ = name.split("_")
    causal, d = mask == "causal", int(d_name[1:])
    shapes = ([(b, h, None, s, s, dd, c) for b, h, s, dd, c in SHAPES] if form == "mha"
              else [(b, h, hk, s, s, dd, c) for b, h, hk, s, dd, c in GQA_SHAPES]
              + [(b, h, hk, s, l, dd, c) for b, h, hk, s, l, dd in DECODE_SHAPES
                 for c in (False, True)])
    shapes += [shape for shape in SHORT_GRID_SHAPES if (shape[2] is None) == (form == "mha")]
    for b, h, hk, s, l, dd, c in shapes:
        if (dd, c) != (d, causal):
            continue
        sets = 2
        data = [[torch.randn(b, n, rows, d, device="cuda", dtype=torch.float16)
                 for n, rows in ((h, s), (hk or h, l), (hk or h, l))] for _ in range(sets)]

        def library(i, data=data, h=h, hk=hk, s=s, l=l):
            q, k, v = data[i]
            if hk:
                k, v = (t.repeat_interleave(h // hk, dim=1) for t in (k, v))
            if causal and s != l:  # SDPA's is_causal aligns top-left, ours bottom-right
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v,
                                                          attn_mask=causal_lower_right(s, l))
            return torch_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)()
        ref = library(0).clone()
        out = torch.empty_like(ref)

        def ours(call, data=data, o=out, b=b, h=h, hk=hk, s=s, l=l):
            sizes = dict(B=b, H=h, S=s, L=l, **({"HK": hk} if hk else {}))
            return lambda i: call(Q=data[i][0], K=data[i][1], V=data[i][2], O=o,
                                  scale=1.0 / math.sqrt(d), **sizes)
        label = f"{name} B={b} H={h}{f' HK={hk}' if hk else ''} S={s}{f' L={l}' if l != s else ''}"
        yield label, library, ours, ref, out, sets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="substring of the kernel names to time")
    parser.add_argument("--graph", action="store_true",
                        help="time CUDA-graph replays for every kernel (the GPU's time without "
                             "the host's), not only the projections'")
    parser.add_argument("--conv-layers", default="",
                        help="convolution layers instead of bench_conv.py's: C,HW,K,R,stride,pad "
                             "separated by ';' (e.g. 64,7,64,3,1,1;64,14,64,3,1,1)")
    parser.add_argument("--conv-batch", type=int, default=BATCH)
    parser.add_argument("--time-wrong", action="store_true",
                        help="time kernels whose outputs are wrong too (timing-only labs that "
                             "skip work on purpose); without it only right outputs are timed")
    args = parser.parse_args()
    layers = [tuple(int(v) for v in layer.split(",")) for layer in args.conv_layers.split(";")
              if layer]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    names = sorted(p for p in sketch_gpu.prototypes()
                   if p + "_ab" in sketch_gpu.prototypes() and args.only in p)
    for name in names:
        kind = name.split("_")[0]
        if kind == "bc":
            cases = conv_cases(name, layers, args.conv_batch)
        else:
            cases = {"bp": projection_cases, "attn": attention_cases,
                     "be": full_read_cases}.get(kind, gemm_cases)(name)
        graph = args.graph or kind == "bp"  # these take less time than a call from Python
        for label, library, ours, ref, out, sets in cases:
            runs = {"library": library}
            for kernel in (name, name + "_ab"):
                run = ours(sketch_gpu.kernel(kernel))
                out.fill_(float("nan"))
                status = run(0)
                torch.cuda.synchronize()
                err = rel_error(out, ref)
                print(f"{label}: {kernel} status {status} error {err:.2e}", flush=True)
                if status == 0 and (err < 1e-2 or args.time_wrong):
                    runs[kernel] = run
            for round_ in range(args.rounds):
                times = time_interleaved_ms(runs, sets, graph=graph)
                new, old = times.get(name), times.get(name + "_ab")
                line = ", ".join(f"{k} {v:.4f}" for k, v in times.items())
                ratio = f"  new/old {new / old:.3f}" if new and old else ""
                print(f"{label} round {round_}: {line}{ratio}", flush=True)


if __name__ == "__main__":
    main()
