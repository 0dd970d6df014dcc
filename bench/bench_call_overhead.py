#!/usr/bin/env python3
"""Host time of a call from Python: the sketch package's callable against torch's own op.

CPU time a call takes on the host (a loop of calls on the current stream, timed with
perf_counter, median of rounds; the kernels are small, so the launch queue never fills
and the GPU is not what is timed), for: the checked callable (first call: the full
checks; later calls with the same shapes: its CallPlan), the callable with the output
passed, the raw ctypes host function (arguments computed once), and torch's op for the
same work. Small inputs are where this decides a model's time: a decode step or a
batch-32 CNN launches many small kernels. Prints a markdown table ($OUT/call_overhead.md).
    SKETCHC=.gen/bin/sketchc python3 bench/bench_call_overhead.py [--results bench/RESULTS.md] [--profile]
"""
import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import bench_common  # noqa: E402
import sketch  # noqa: E402


def per_call_us(call, calls=1000, rounds=7):
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def raw(op, tensors, sizes):
    """The ctypes host function with its arguments computed once."""
    args = [t.data_ptr() for t in tensors] + list(sizes)
    args.append(torch.cuda.current_stream().cuda_stream)
    return lambda: op.function(*args)


def measure(llama, conv):
    dev, bf, hf = "cuda", torch.bfloat16, torch.float16
    x = torch.randn(1, 2048, device=dev, dtype=bf)
    w = torch.randn(6144, 2048, device=dev, dtype=bf)
    y = torch.empty(1, 6144, device=dev, dtype=bf)
    linear = "linear M=1 N=6144 K=2048 (bf16)"
    rows = [
        (linear, "sketch callable, Y allocated", per_call_us(lambda: llama.llama_linear(x, w))),
        (linear, "sketch callable, Y passed", per_call_us(lambda: llama.llama_linear(x, w, Y=y))),
        (linear, "ctypes host function alone", per_call_us(raw(llama.llama_linear, (x, w, y), (1, 2048, 6144)))),
        (linear, "torch F.linear", per_call_us(lambda: F.linear(x, w))),
        (linear, "torch.matmul(out=)", per_call_us(lambda: torch.matmul(x, w.t(), out=y))),
    ]
    xi = torch.randn(8, 56, 56, 64, device=dev, dtype=hf)
    wi = torch.randn(64, 3, 3, 64, device=dev, dtype=hf)
    bi = torch.randn(64, device=dev, dtype=hf)
    yo = torch.empty(8, 56, 56, 64, device=dev, dtype=hf)
    xc, wc = xi.permute(0, 3, 1, 2), wi.permute(0, 3, 1, 2)  # channels_last views
    torch.backends.cudnn.benchmark = True
    conv_name = "conv nhwc N=8 C64 56x56 3x3 + bias, ReLU (f16)"
    rows += [
        (conv_name, "sketch callable, Out allocated", per_call_us(lambda: conv.conv2d_nhwc(xi, wi, bi))),
        (conv_name, "sketch callable, Out passed", per_call_us(lambda: conv.conv2d_nhwc(xi, wi, bi, Out=yo))),
        (conv_name, "ctypes host function alone", per_call_us(raw(conv.conv2d_nhwc, (xi, wi, bi, yo), (8, 56, 56, 64, 64, 3, 3)))),
        (conv_name, "torch conv2d + relu_ (cuDNN)", per_call_us(lambda: F.conv2d(xc, wc, bi, padding=1).relu_())),
    ]
    q = torch.randn(1, 16, 1, 128, device=dev, dtype=bf)
    kv = torch.randn(1, 4, 77, 128, device=dev, dtype=bf)
    o = torch.empty_like(q)
    attention = "attention B1 H16 HK4 S=1 L=77 D128 causal (bf16)"
    rows += [
        (attention, "sketch callable, O passed", per_call_us(lambda: llama.llama_attention(q, kv, kv, O=o, scale=0.08))),
        (attention, "torch SDPA", per_call_us(lambda: F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True))),
    ]
    return rows, (x, w)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", help="append the table to this markdown file")
    parser.add_argument("--profile", action="store_true",
                        help="also print cProfile's top entries of 2000 callable calls")
    args = parser.parse_args()
    llama = sketch.compile(os.path.join(ROOT, "examples", "llama", "decoder_layer.sketch"))
    conv = sketch.compile(os.path.join(ROOT, "examples", "conv2d_nhwc.sketch"))
    with torch.no_grad():
        rows, (x, w) = measure(llama, conv)
    lines = [f"CPU time a call takes on the host, us (median of 7 rounds of 1000 calls); "
             f"{torch.cuda.get_device_name()}, torch {torch.__version__}.", "",
             "| call | form | us a call |", "| --- | --- | --- |"]
    lines += [f"| {name} | {form} | {us:.2f} |" for name, form, us in rows]
    bench_common.publish("\n".join(lines), "Host time of a call (bench/bench_call_overhead.py, same run)",
                         args.results, "call_overhead.md")
    if args.profile:
        profiler = cProfile.Profile()
        with torch.no_grad():
            profiler.enable()
            for _ in range(2000):
                llama.llama_linear(x, w)
            profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
