"""Times the lab's tall kernel (make_lab.py) in each load mode against the generated one and
cuDNN, CUDA-graph replays in alternating batches; outputs checked in mode 0 only (the other
modes compute wrong outputs on purpose).
  SKETCH_GPU_LIB=/tmp/ab/libab.so SKETCH_GPU_GEN=.gen/ab python3 modes.py"""
import ctypes
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "gpu"))
import sketch_gpu  # noqa: E402
from bench_ab import conv_cases  # noqa: E402
from bench_common import rel_error, time_interleaved_ms  # noqa: E402

MODES = {0: "as generated", 1: "no im2col loads", 2: "A as a tiled box", 3: "im2col at one tap",
         4: "no filter loads", 5: "no loads"}


def main():
    torch.backends.cudnn.benchmark = True
    lib = ctypes.CDLL(os.environ["SKETCH_GPU_LIB"])
    name = "bc_f16_s2p1_default"
    for batch in (128, 64):
        for label, library, ours, ref, out, sets in conv_cases(name, [(128, 56, 128, 3, 2, 1)], batch):
            new, old = ours(sketch_gpu.kernel(name)), ours(sketch_gpu.kernel(name + "_ab"))
            for mode, what in MODES.items():
                assert lib.lab_set_mode(mode) == 0
                if mode == 0:
                    out.fill_(float("nan"))
                    new(0)
                    torch.cuda.synchronize()
                    print(f"{label}: mode 0 error {rel_error(out, ref):.2e}", flush=True)
                t = time_interleaved_ms({"mode": new, "old": old, "library": library}, sets, graph=True)
                print(f"{label} mode {mode} ({what}): {t['mode']:.4f} ms, generated {t['old']:.4f}, "
                      f"cuDNN {t['library']:.4f}, mode/generated {t['mode'] / t['old']:.3f}", flush=True)


if __name__ == "__main__":
    main()
