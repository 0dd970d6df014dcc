#!/usr/bin/env python3
"""Same-process A/B (lab): the Llama layer and ResNet-50 forwards with the package's call
plans against the full checks on every call (KernelOp._call_key patched to None), and eager.
    SKETCHC=.gen/bin/sketchc python3 bench/labs/host_overhead/models_ab.py
"""
import os
import sys

import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
for sub in ("bench", "python", "examples/llama", "examples/resnet"):
    sys.path.insert(0, os.path.join(ROOT, sub))
import bench_common  # noqa: E402
import sketch_llama  # noqa: E402
import sketch_resnet  # noqa: E402
from sketch._torch_ops import KernelOp  # noqa: E402

planned_key = KernelOp._call_key


def mode(planned):
    KernelOp._call_key = planned_key if planned else (lambda self, args, kwargs: None)


def main():
    torch.backends.cudnn.benchmark = True
    config = sketch_llama.small_config()
    layer, rotary = sketch_llama.make_layer(config)
    ours = sketch_llama.SketchDecoderLayer(layer)
    _, folded = sketch_resnet.make_models(seed=0)
    net = sketch_resnet.SketchResNet50(folded, kernels=sketch_resnet.compile_kernels())
    cases = []
    for seq in (1, 77):
        x, pe = sketch_llama.make_inputs(rotary, 1, seq, config.hidden_size)
        cases.append((f"Llama layer seq {seq}", lambda x=x, pe=pe: ours(x, pe),
                      lambda x=x, pe=pe: sketch_llama.run_layer(layer, x, pe), 50))
    images = sketch_resnet.random_images(32, 224, 224)
    cases.append(("ResNet-50 batch 32", lambda: net(images), lambda: folded(images), 20))
    print("| forward | round | plans ms | checks every call ms | eager ms |\n| --- | --- | --- | --- | --- |")
    with torch.no_grad():
        for name, run, eager, per_batch in cases:
            for round_ in range(3):
                times = []
                for planned in (True, False):
                    mode(planned)
                    times.append(bench_common.time_ms(lambda i: run(), 1, batches=9,
                                                      per_batch=per_batch, warmup=3))
                mode(True)
                times.append(bench_common.time_ms(lambda i: eager(), 1, batches=9,
                                                  per_batch=per_batch, warmup=3))
                print(f"| {name} | {round_} | {times[0]:.3f} | {times[1]:.3f} | {times[2]:.3f} |",
                      flush=True)


if __name__ == "__main__":
    main()
