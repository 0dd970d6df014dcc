#!/usr/bin/env python3
"""Convolution and SIMT SGEMM benchmarks: the generated kernels against torch, one run.

Cases (issue 5 and the f32 part of issue 4):
  ResNet-50 layers, N = 64: C64 56x56 K64 3x3; C256 56x56 K64 1x1; C128 28x28 K128 3x3;
  C256 14x14 K256 3x3; C512 7x7 K512 3x3; C128 56x56 K128 3x3 stride 2.
    f16 and bf16 nhwc/krsc (tensor cores)  >= 0.5x torch conv2d on channels_last (cuDNN)
    f32 nchw/kcrs (SIMT)          >= 0.6x torch conv2d f32 (cuDNN), TF32 off
    f32 nhwc/krsc ("f32nhwc")     >= 0.6x torch conv2d f32 on channels_last (cuDNN), TF32 off
  f32 GEMM 4096^3 (SIMT)          >= 0.8x torch.matmul (cuBLAS SGEMM), TF32 off
torch.backends.cudnn.benchmark = True (cuDNN picks its fastest algorithm first).
Each layer is run by every block configuration of bench/conv/*.sketch (for f32
3x3 stride-1 layers also the Winograd kernels, bc_f32_s1p1_winograd (F(4x4, 3x3), as the
default) and bc_f32_s1p1_winograd_2x2);
the best correct one is compared. Timing: CUDA events around batches of calls after
warm-up, the median per-call time; inputs rotate among several sets; each convolution is
timed both eagerly and as CUDA-graph replays, on both sides, and keeps the lower (a layer
takes about as long as a call from Python, so eager times can be the host's pace, while
cuDNN's eager calls ran faster than its graphs: 30.3 against 33.5 us at stride 2); then
the library, our default and our best are timed again in alternating batches, eager and
graph, and those times are reported (bench_common.head_to_head: the same clocks for all;
cuDNN's stride-2 layer had moved 30-35 us between runs); the SGEMM's likewise, eager
only. Each kernel's output is first checked against torch's (normwise relative error).
Prints a table and writes it to $OUT/RESULTS_conv.md when OUT is set.
"""
import argparse
import datetime
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
import sketch_gpu  # noqa: E402
from bench_common import Contenders, comparison_markdown, head_to_head, measure_kernel, time_ms  # noqa: E402

# (C, H = W, K, R = S, stride, pad)
LAYERS = [(64, 56, 64, 3, 1, 1), (256, 56, 64, 1, 1, 0), (128, 28, 128, 3, 1, 1),
          (256, 14, 256, 3, 1, 1), (512, 7, 512, 3, 1, 1), (128, 56, 128, 3, 2, 1)]
BATCH = 64


def cuda_kernels(run):
    """The CUDA kernels one call of run() launches (names shortened), via torch.profiler."""
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return "; ".join(n[:90] for n in dict.fromkeys(names)) or "(none seen)"


def our_kernels(prefix):
    return sorted(name for name in sketch_gpu.prototypes() if name.startswith(prefix))


def conv_case(dtype_name, layer, rows, detail):
    c, hw, k, r, stride, pad = layer
    nhwc = dtype_name in ("f16", "bf16", "f32nhwc")
    element = "f32" if dtype_name == "f32nhwc" else dtype_name
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[element]
    fmt = torch.channels_last if nhwc else torch.contiguous_format
    sets = 3
    data = []
    for _ in range(sets):
        x = torch.randn(BATCH, c, hw, hw, device="cuda").to(dtype).contiguous(memory_format=fmt)
        w = (torch.randn(k, c, r, r, device="cuda") / (c * r * r) ** 0.5).to(dtype)
        data.append((x, w.contiguous(memory_format=fmt)))
    ref = F.conv2d(data[0][0], data[0][1], stride=stride, padding=pad)
    # eager and CUDA-graph times, the lower, on both sides: a layer takes 30-40 us, about
    # what a call from Python takes
    library = lambda i: F.conv2d(data[i][0], data[i][1], stride=stride, padding=pad)  # noqa: E731
    torch_ms = time_ms(library, sets, graph="best")
    library_kernels = cuda_kernels(lambda: library(0))
    p = ref.shape[2]
    flop = 2.0 * BATCH * k * p * p * c * r * r
    label = f"{element} {'nhwc' if nhwc else 'nchw'} C{c} {hw}x{hw} K{k} {r}x{r} s{stride}"
    print(f"{label}: torch {torch_ms:.3f} ms ({flop / torch_ms / 1e9:.1f} TFLOP/s)", flush=True)
    print(f"  cuDNN runs: {library_kernels}", flush=True)
    # Our tensors: the same memory seen in the kernel's layout (nhwc / krsc for channels_last).
    y = torch.empty_like(ref)
    y_ours = y.permute(0, 2, 3, 1) if nhwc else y
    best = (float("inf"), None, None)
    contenders = Contenders()
    prefix = f"bc_{dtype_name}_s{stride}p{pad}_"
    for name in our_kernels(prefix):
        call = sketch_gpu.kernel(name)

        def launch(i, call=call):
            x, w = data[i]
            xs, ws = (x.permute(0, 2, 3, 1), w.permute(0, 2, 3, 1)) if nhwc else (x, w)
            return call(X=xs, Wt=ws, Y=y_ours, N=BATCH, C=c, H=hw, W=hw, K=k, R=r, S=r)
        ms, err = measure_kernel(name, launch, y, ref, sets, flop, label, detail, graph="best")
        if err < 1e-2:
            contenders.add(name, launch, ms)
        if err < 1e-2 and ms < best[0]:
            best = (ms, name, err)
    if contenders.runs:
        # the library, our default and our best again in alternating batches (the same clocks)
        times, (ms, name) = head_to_head({"torch": library}, contenders.runs, sets, detail,
                                         graph="best")
        torch_ms, best = times["torch"], (ms, name, best[2])
    target = 0.6 if element == "f32" else 0.5
    rows.append((label, best[1], best[0], flop / best[0] / 1e9 if best[1] else 0.0,
                 "torch conv2d (cuDNN)", torch_ms, flop / torch_ms / 1e9, target))


def sgemm_case(rows, detail, n=4096):
    sets = 3
    data = [(torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda") / n ** 0.5)
            for _ in range(sets)]
    out = torch.empty(n, n, device="cuda")
    library = lambda i: torch.matmul(data[i][0], data[i][1], out=out)  # noqa: E731
    torch_ms = time_ms(library, sets)
    ref = torch.matmul(data[0][0].double(), data[0][1].double())
    flop = 2.0 * n ** 3
    label = f"f32 GEMM {n}^3"
    print(f"{label}: cuBLAS {torch_ms:.3f} ms ({flop / torch_ms / 1e9:.1f} TFLOP/s)", flush=True)
    best = (float("inf"), None, None)
    contenders = Contenders()
    for name in our_kernels("bs_f32_"):
        call = sketch_gpu.kernel(name)
        scale = {"alpha": 1.0} if any(p == "alpha" for _, p in call.params) else {}
        launch = lambda i, call=call, scale=scale: call(A=data[i][0], B=data[i][1], D=out,  # noqa: E731
                                                        M=n, N=n, K=n, **scale)
        ms, err = measure_kernel(name, launch, out, ref, sets, flop, label, detail)
        if err < 1e-4:
            contenders.add(name, launch, ms)
        if err < 1e-4 and ms < best[0]:
            best = (ms, name, err)
    if contenders.runs:
        # cuBLAS, our default and our best again in alternating batches (the same clocks)
        times, (ms, name) = head_to_head({"cuBLAS": library}, contenders.runs, sets, detail)
        torch_ms, best = times["cuBLAS"], (ms, name, best[2])
    rows.append((label, best[1], best[0], flop / best[0] / 1e9 if best[1] else 0.0,
                 "torch.matmul (cuBLAS SGEMM)", torch_ms, flop / torch_ms / 1e9, 0.8))


def table(rows, detail, commit):
    device = torch.cuda.get_device_name()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    heading = [f"\n## {date}, {device}, commit {commit}\n",
               f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
               f"{torch.backends.cudnn.version()}; TF32 off; cudnn.benchmark on. "
               "Ratio = torch time / our time.\n"]
    return comparison_markdown(heading, rows, detail, "case")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--only", choices=["f16", "bf16", "f32", "f32nhwc", "sgemm"],
                        help="one group of cases")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    rows, detail = [], []
    if args.only in (None, "sgemm"):
        sgemm_case(rows, detail)
    for dtype_name in ["f16", "bf16", "f32", "f32nhwc"]:
        if args.only in (None, dtype_name):
            for layer in LAYERS:
                conv_case(dtype_name, layer, rows, detail)
    text = table(rows, detail, args.commit)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "RESULTS_conv.md"), "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
