#!/usr/bin/env python3
"""Tokens/s of a Llama decoder layer: sketch kernels vs torch eager (SDPA) vs torch.compile.

The layer is transformers' LlamaDecoderLayer (hidden 2048, 16 heads, 4 KV
heads, head dim 128, MLP 5632, bf16, random weights; examples/llama). Ours is
SketchDecoderLayer over the same weights: every GEMM and the attention are
sketch kernels compiled with no directives (sketch.compile, sketchc's
defaults); RMSNorm and the rotary embedding stay torch code, so "ours + torch.compile"
(the same module under torch.compile, the kernels as torch.library ops) fuses them as
torch.compile does for the layer. All four run in this process, on the same inputs,
timed with CUDA events in alternating batches (warm-up, medians); each output is checked
against the eager layer first. Prints a markdown table (and writes it to $OUT/llama.md).
    python3 bench/bench_llama_layer.py [--seqs 1,77,4096] [--batch 1]
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "llama"))

import bench_common  # noqa: E402
import sketch_llama  # noqa: E402


def timed(forwards, x, position_embeddings, per_batch):
    """Median ms of each forward, timed in alternating batches (bench_common.
    time_interleaved_ms): at a few tokens the host's pace decides these times, and it moved
    15-25% between processes, so the three share each stretch of the run."""
    runs = {i: (lambda _, f=f: f(x, position_embeddings)) for i, f in enumerate(forwards)}
    with torch.no_grad():
        times = bench_common.time_interleaved_ms(runs, 1, batches=15, per_batch=per_batch,
                                                 warmup=3)
    return [times[i] for i in range(len(forwards))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqs", default="1,77,4096")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--results", help="append the table to this markdown file")
    parser.add_argument("--profile", action="store_true",
                        help="also print the GPU kernels of each forward (torch.profiler)")
    args = parser.parse_args()
    config = sketch_llama.small_config()
    layer, rotary = sketch_llama.make_layer(config)
    ours = sketch_llama.SketchDecoderLayer(layer)
    eager = lambda x, pe: sketch_llama.run_layer(layer, x, pe)  # noqa: E731
    compiled_layer = torch.compile(layer)
    compiled = lambda x, pe: sketch_llama.run_layer(compiled_layer, x, pe)  # noqa: E731
    ours_compiled = torch.compile(ours, fullgraph=True)
    rows = []
    for seq in (int(s) for s in args.seqs.split(",")):
        x, pe = sketch_llama.make_inputs(rotary, args.batch, seq, config.hidden_size)
        with torch.no_grad():
            ref = eager(x, pe)
            errors = [bench_common.rel_error(f(x, pe), ref) for f in (ours, ours_compiled)]
        if args.profile:
            bench_common.profile_kernels({"ours": lambda: ours(x, pe), "eager": lambda: eager(x, pe),
                                          "ours + torch.compile": lambda: ours_compiled(x, pe),
                                          "torch.compile": lambda: compiled(x, pe)})
        per_batch = 50 if seq < 256 else 10
        times = timed((ours, ours_compiled, eager, compiled), x, pe, per_batch)
        tokens = args.batch * seq
        rows.append((seq, times, errors, tokens))
        print(f"seq {seq}: ours {times[0]:.3f} ms, ours + torch.compile {times[1]:.3f} ms, "
              f"eager {times[2]:.3f} ms, compiled {times[3]:.3f} ms "
              f"(errors {errors[0]:.1e}, {errors[1]:.1e})", flush=True)
    lines = [f"Llama decoder layer (hidden 2048, 16 heads, 4 KV heads, head dim 128, MLP 5632, "
             f"bf16), batch {args.batch}; {torch.cuda.get_device_name()}, torch "
             f"{torch.__version__}. Ratios = their time / ours: eager against ours, "
             f"torch.compile against ours + torch.compile (RMSNorm and the rotary embedding "
             f"fused by torch.compile on both sides).", "",
             "| seq | ours ms | tokens/s | ours + torch.compile ms | tokens/s | eager (SDPA) ms "
             "| tokens/s | ratio | torch.compile ms | tokens/s | ratio | rel. error vs eager "
             "(ours, + torch.compile) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for seq, (ours_ms, ours_comp_ms, eager_ms, comp_ms), errors, tokens in rows:
        rate = lambda ms: f"{tokens / ms * 1e3:,.0f}"  # noqa: E731
        lines.append(f"| {seq} | {ours_ms:.3f} | {rate(ours_ms)} | {ours_comp_ms:.3f} | "
                     f"{rate(ours_comp_ms)} | {eager_ms:.3f} | {rate(eager_ms)} | "
                     f"{eager_ms / ours_ms:.2f}x | {comp_ms:.3f} | {rate(comp_ms)} | "
                     f"{comp_ms / ours_comp_ms:.2f}x | {errors[0]:.1e}, {errors[1]:.1e} |")
    table = "\n".join(lines)
    bench_common.publish(table, "Llama decoder layer (bench/bench_llama_layer.py, same run)",
                         args.results, "llama.md")


if __name__ == "__main__":
    main()
