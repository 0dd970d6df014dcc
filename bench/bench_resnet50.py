#!/usr/bin/env python3
"""Images/s of ResNet-50: sketch kernels vs torch eager vs torch.compile, in one run.

The model is torchvision's resnet50 (random weights, batch norms with random
affine parameters and statistics, folded into the convolutions), f16,
channels_last, 224x224 images (examples/resnet). Ours is SketchResNet50 over
the same weights: every convolution with its bias, ReLU and residual add is a
kernel of examples/resnet/resnet50.sketch (compiled by sketch.compile; the
kernel per convolution by SketchConv.kernel_for, and also the 64 x 64 tile
everywhere), max pool, average pool and the classifier are torch. Torch eager
runs the folded model with torch.backends.cudnn.benchmark on; torch.compile
compiles it (default mode). Each forward is also captured in a CUDA graph
(ours and eager), which removes the Python and launch overhead. Every output is
checked against eager first; each is timed with CUDA events (warm-up, median of
9 batches of calls). The stem table times the 7x7 stride-2 convolution alone:
the 3-channel image on the element path, the image padded to 8 channels (the
16-byte path, the pad included), and cuDNN. Prints markdown tables (and writes
them to $OUT/resnet50.md).
    python3 bench/bench_resnet50.py [--batches 32,128] [--size 224] [--results FILE]
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "resnet"))

import bench_common  # noqa: E402
import sketch_resnet  # noqa: E402


def timed(forward, images, per_batch):
    with torch.no_grad():
        return bench_common.time_ms(lambda i: forward(images), 1, batches=9,
                                    per_batch=per_batch, warmup=3)


def cuda_graph(forward, images):
    """forward captured in a CUDA graph on a static copy of `images` (after 3 warm-up
    calls on a side stream); the returned function copies its input in and replays."""
    static = images.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(stream):
        for _ in range(3):
            forward(static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = forward(static)

    def replay(x):
        static.copy_(x)
        graph.replay()
        return out
    return replay


def graphed(forward, images):
    """cuda_graph(forward, images), or None (and the reason printed) when capture fails."""
    try:
        return cuda_graph(forward, images)
    except Exception as e:  # noqa: BLE001 (reported; the row is left out)
        print(f"CUDA graph capture failed: {type(e).__name__}: {e}", flush=True)
        torch.cuda.synchronize()
        return None


def stem_rows(fast, fast_unpadded, folded, images, per_batch):
    """(name, ms, error vs cuDNN) of the stem convolution (+ bias, ReLU) alone."""
    padded, unpadded = fast.stem, fast_unpadded.stem
    x3 = images.permute(0, 2, 3, 1).contiguous()
    with torch.no_grad():
        runs = [  # each gives the NHWC output
            ("ours, 3 channels (element path)", lambda: unpadded(x3)),
            ("ours, padded to 8 channels (16-byte path), pad included",
             lambda: padded(fast.stem_input(images))),
            ("torch conv2d + ReLU (cuDNN)",
             lambda: torch.relu(folded.conv1(images)).permute(0, 2, 3, 1)),
        ]
        ref = runs[-1][1]()
        rows = []
        for name, run in runs:
            error = bench_common.rel_error(run(), ref)
            ms = bench_common.time_ms(lambda i: run(), 1, batches=9, per_batch=per_batch,
                                      warmup=3)
            rows.append((name, ms, error))
            print(f"  stem: {name}: {ms:.3f} ms (error {error:.1e})", flush=True)
    return rows


def recorded_convs(fast, images):
    """The distinct convolutions of one forward, after the stem: [(SketchConv, input, residual,
    how many convolutions of the network have this form and these shapes)], in order."""
    seen = {}
    call = sketch_resnet.SketchConv.__call__

    def recording(conv, x, residual=None, tiles="auto"):
        key = (sketch_resnet.KERNELS[(conv.size, conv.stride, conv.pad, conv.epilogue)],
               tuple(x.shape), conv.out_channels)
        if conv is not fast.stem:
            entry = seen.setdefault(key, [conv, x, residual, 0])
            entry[3] += 1
        return call(conv, x, residual, tiles)
    sketch_resnet.SketchConv.__call__ = recording
    try:
        with torch.no_grad():
            fast(images)
    finally:
        sketch_resnet.SketchConv.__call__ = call
    return list(seen.values())


def torch_conv(conv, x, residual):
    """What eager torch runs for a SketchConv: the folded conv (cuDNN), then the epilogue."""
    y = conv.module(x.permute(0, 3, 1, 2))
    if conv.epilogue == "add_relu":
        return torch.relu(y + residual.permute(0, 3, 1, 2))
    return torch.relu(y) if conv.epilogue == "relu" else y


def per_conv_rows(fast, images, per_batch):
    """Each distinct convolution timed with either tile and with cuDNN (+ its epilogue)."""
    rows = []
    with torch.no_grad():
        for conv, x, residual, count in recorded_convs(fast, images):
            ref = torch_conv(conv, x, residual).permute(0, 2, 3, 1)
            times, errors = [], []
            for run in (lambda: conv(x, residual, tiles="large"),
                        lambda: conv(x, residual, tiles="small"),
                        lambda: torch_conv(conv, x, residual).permute(0, 2, 3, 1)):
                errors.append(bench_common.rel_error(run(), ref))
                times.append(bench_common.time_ms(lambda i: run(), 1, batches=7,
                                                  per_batch=per_batch, warmup=3))
            n, h, w, c = x.shape
            chosen = "large" if conv.kernel_for(conv.out_shape(x)) is conv.large else "small"
            flop = 2.0 * n * conv.out_shape(x)[1] * conv.out_shape(x)[2] * conv.out_channels \
                * c * conv.size * conv.size
            rows.append((sketch_resnet.KERNELS[(conv.size, conv.stride, conv.pad, conv.epilogue)],
                         f"{n}x{h}x{w}x{c}", conv.out_channels, count, times, max(errors[:2]),
                         chosen, flop))
            print(f"  {rows[-1][0]} {rows[-1][1]} K{conv.out_channels} x{count}: large "
                  f"{times[0]:.3f} ms, small {times[1]:.3f} ms, cuDNN {times[2]:.3f} ms "
                  f"(picked {chosen})", flush=True)
    return rows


def per_conv_markdown(batch, rows):
    lines = [f"Each distinct convolution of the batch-{batch} forward (after the stem) alone: "
             f"ours with the 128 x 128 and the 64 x 64 tile, torch's folded conv (cuDNN) and its "
             f"epilogue (ReLU, add) as eager runs them. TFLOP/s of the faster tile; total = "
             f"sum of ms x count.", "",
             "| kernel | input NHWC | K | count | 128 x 128 ms | 64 x 64 ms | picked | TFLOP/s "
             "| cuDNN + epilogue ms | cuDNN / best | error |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    totals = [0.0, 0.0, 0.0, 0.0]
    for name, shape, k, count, (large, small, cudnn), error, chosen, flop in rows:
        picked = large if chosen == "large" else small
        for i, ms in enumerate((large, small, picked, cudnn)):
            totals[i] += ms * count
        lines.append(f"| {name} | {shape} | {k} | {count} | {large:.3f} | {small:.3f} | {chosen} "
                     f"| {flop / min(large, small) / 1e9:.0f} | {cudnn:.3f} | "
                     f"{cudnn / min(large, small):.2f}x | {error:.1e} |")
    lines.append(f"| total | | | | {totals[0]:.3f} | {totals[1]:.3f} | {totals[2]:.3f} | | "
                 f"{totals[3]:.3f} | {totals[3] / totals[2]:.2f}x (picked) | |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="32,128")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--results", help="append the tables to this markdown file")
    parser.add_argument("--per-conv", action="store_true",
                        help="also time each distinct convolution with either tile and cuDNN")
    parser.add_argument("--profile", action="store_true",
                        help="also print the GPU kernels of ours and of eager (torch.profiler)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    _, folded = sketch_resnet.make_models(seed=0)
    kernels = sketch_resnet.compile_kernels()
    fast = sketch_resnet.SketchResNet50(folded, kernels=kernels)
    fast_small = sketch_resnet.SketchResNet50(folded, kernels=kernels, tiles="small")
    fast_unpadded = sketch_resnet.SketchResNet50(folded, kernels=kernels, stem_channels=3)
    compiled = torch.compile(folded, dynamic=False)
    rows, stems, convs = [], [], []
    for batch in (int(b) for b in args.batches.split(",")):
        images = sketch_resnet.random_images(batch, args.size, args.size)
        per_batch = max(3, 640 // batch)
        forwards = {
            "ours (sketch kernels)": fast,
            "ours, the 64 x 64 tile everywhere": fast_small,
            "ours, CUDA graph": graphed(fast, images),
            "torch eager (cuDNN)": folded,
            "torch eager, CUDA graph": graphed(folded, images),
            "torch.compile": compiled,
        }
        forwards = {name: f for name, f in forwards.items() if f is not None}
        with torch.no_grad():
            ref = folded(images)
            errors = {name: bench_common.rel_error(f(images), ref)
                      for name, f in forwards.items()}
        if args.profile:
            bench_common.profile_kernels({"ours": lambda: fast(images),
                                          "eager": lambda: folded(images)}, rows=20)
        times = {}
        for name, forward in forwards.items():
            times[name] = timed(forward, images, per_batch)
            print(f"batch {batch}: {name}: {times[name]:.3f} ms, "
                  f"{batch / times[name] * 1e3:,.0f} images/s (error {errors[name]:.1e})",
                  flush=True)
        eager_ms = times["torch eager (cuDNN)"]
        rows += [(batch, name, ms, eager_ms / ms, errors[name]) for name, ms in times.items()]
        stems += [(batch,) + row for row in
                  stem_rows(fast, fast_unpadded, folded, images, per_batch)]
        if args.per_conv:
            convs += ["", *per_conv_markdown(batch, per_conv_rows(fast, images, per_batch))]
    lines = [f"ResNet-50 (torchvision, random weights, batch norm folded), f16 channels_last, "
             f"{args.size}x{args.size}; {torch.cuda.get_device_name()}, torch {torch.__version__}, "
             f"cudnn.benchmark on. vs eager = eager time / this time; error = relative "
             f"(Frobenius) error of the logits vs eager.", "",
             "| batch | forward | ms | images/s | vs eager | error |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {batch} | {name} | {ms:.3f} | {batch / ms * 1e3:,.0f} | {ratio:.2f}x | "
              f"{error:.1e} |" for batch, name, ms, ratio, error in rows]
    lines += ["", "The stem alone (7x7 stride 2, 3 -> 64 channels, bias, ReLU):", "",
              "| batch | stem | ms | error vs cuDNN |", "| --- | --- | --- | --- |"]
    lines += [f"| {batch} | {name} | {ms:.3f} | {error:.1e} |" for batch, name, ms, error in stems]
    table = "\n".join(lines + convs)
    bench_common.publish(table, "ResNet-50 (bench/bench_resnet50.py, same run)",
                         args.results, "resnet50.md")


if __name__ == "__main__":
    main()
