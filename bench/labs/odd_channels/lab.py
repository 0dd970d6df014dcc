"""Our default nhwc convolution against torch's conv2d (cuDNN, channels_last, benchmark mode)
where the output channels are not a multiple of 8 (a detection head's 255), beside the aligned
neighbour 256, in one process (CUDA graphs, alternating batches); the kernels of two
compilers side by side (bench/ab.sh renames the old one's NAME_ab). Every output is checked
against cuDNN's first.

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... python3 bench/labs/odd_channels/lab.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
import sketch_gpu  # noqa: E402
from bench_common import print_rounds, rel_error  # noqa: E402

SHAPES = [  # (N, C, H=W, K, R): YOLO's three heads (1x1), then 3x3 layers
    (16, 256, 80, 255, 1), (16, 256, 80, 256, 1),
    (16, 512, 40, 255, 1), (16, 1024, 20, 255, 1),
    (32, 128, 28, 129, 3), (32, 128, 28, 128, 3),
    (8, 64, 56, 63, 3),
]


def main():
    torch.backends.cudnn.benchmark = True
    names = sketch_gpu.prototypes()
    for n, c, hw, k, r in SHAPES:
        kernel = "odd_conv_1x1" if r == 1 else "odd_conv_3x3"
        mine = [name for name in names if name.startswith(kernel)]
        sets = 3
        data = []
        for _ in range(sets):
            x = torch.randn(n, c, hw, hw, device="cuda").half()
            w = (torch.randn(k, c, r, r, device="cuda") / (c * r * r) ** 0.5).half()
            data.append((x.contiguous(memory_format=torch.channels_last),
                         w.contiguous(memory_format=torch.channels_last)))
        runs = {"cudnn": lambda i, p=r // 2: F.conv2d(data[i][0], data[i][1], padding=p)}
        ref = runs["cudnn"](0).float()
        for name in mine:
            out = torch.full_like(ref, float("nan")).half().contiguous(
                memory_format=torch.channels_last)
            call = sketch_gpu.kernel(name)
            runs[name] = lambda i, c_=call, o=out: c_(
                X=data[i][0].permute(0, 2, 3, 1), Wt=data[i][1].permute(0, 2, 3, 1),
                Y=o.permute(0, 2, 3, 1), N=n, C=c, H=hw, W=hw, K=k)
            status = runs[name](0)
            torch.cuda.synchronize()
            print(f"{name} N{n} C{c} {hw}x{hw} K{k} {r}x{r}: status {status} "
                  f"error {rel_error(out.float(), ref):.2e}", flush=True)
        print_rounds(f"N{n} C{c} {hw}x{hw} K{k} {r}x{r}", runs, sets, "cudnn", mine)


if __name__ == "__main__":
    main()
