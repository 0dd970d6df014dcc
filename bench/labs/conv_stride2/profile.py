"""One call each of cuDNN's and our stride-2 ResNet-50 layer (C128 56x56 K128 3x3, stride 2,
pad 1, N = 64, f16 channels_last), inside a profiler range, for ncu (README.md).

  SKETCH_GPU_LIB=... SKETCH_GPU_GEN=... ncu --profile-from-start off ... python3 profile.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "gpu"))
import sketch_gpu  # noqa: E402

N = int(os.environ.get("LAB_N", "64"))  # the batch
C, HW, K, R, STRIDE, PAD = 128, 56, 128, 3, 2, 1


def main():
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    x = torch.randn(N, C, HW, HW, device="cuda").half().contiguous(memory_format=torch.channels_last)
    w = (torch.randn(K, C, R, R, device="cuda") / (C * R * R) ** 0.5).half()
    w = w.contiguous(memory_format=torch.channels_last)
    ref = F.conv2d(x, w, stride=STRIDE, padding=PAD)
    out = torch.full_like(ref, float("nan"))
    names = [p for p in sketch_gpu.prototypes() if "s2p1" in p and p.startswith("bc_f16")]
    calls = {"cudnn": lambda: F.conv2d(x, w, stride=STRIDE, padding=PAD)}
    for name in names:
        kernel = sketch_gpu.kernel(name)
        calls[name] = lambda k=kernel: k(X=x.permute(0, 2, 3, 1), Wt=w.permute(0, 2, 3, 1),
                                          Y=out.permute(0, 2, 3, 1), N=N, C=C, H=HW, W=HW, K=K,
                                          R=R, S=R)
    for label, call in calls.items():  # warm up (cuDNN's benchmark search included), check
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        if label != "cudnn":
            err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            print(f"{label}: relative error {err:.2e}", flush=True)
    torch.cuda.profiler.start()
    for label, call in calls.items():
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
