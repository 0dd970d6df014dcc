"""torchvision's ResNet-50 with every convolution on sketch kernels (examples/resnet).

sketch_resnet.make_models builds resnet50(weights=None) with random weights and
batch norms (random affine, statistics measured on random images), and a copy
with the batch norms folded into the convolutions, f16 channels_last.
SketchResNet50 runs that copy's 53 convolutions, each with its bias, ReLU and
residual add, on the kernels of examples/resnet/resnet50.sketch, every output
poisoned (NaN) before its kernel writes it. Its logits must match torch's own
forward of the folded f16 model and of the unfolded f32 model in eval mode
(TF32 off): relative error (Frobenius norm) < 2e-2, for batch 2 and 32 at
224x224, for a ragged 97x113 input, with either tile everywhere, and with the
stem on the unpadded 3-channel image (the element path).
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "resnet"))

import sketch_resnet  # noqa: E402

TOLERANCE = 2e-2
_models = {}


def models():
    """(reference f32, folded f16, kernels), built once for the module's tests."""
    if not _models:
        reference, folded = sketch_resnet.make_models(seed=0)
        _models.update(reference=reference, folded=folded,
                       kernels=sketch_resnet.compile_kernels())
    return _models["reference"], _models["folded"], _models["kernels"]


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), "non-finite logits (an unwritten output or an overflow)"
    return ((out - ref).norm() / ref.norm()).item()


def f32_logits(reference, images):
    """The unfolded f32 model's logits, TF32 off (so the reference is f32 throughout)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return reference(images.float())
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def check(batch, height=224, width=224, **options):
    reference, folded, kernels = models()
    fast = sketch_resnet.SketchResNet50(folded, kernels=kernels, **options)
    fast.set_poison(True)
    images = sketch_resnet.random_images(batch, height, width)
    with torch.no_grad():
        ours = fast(images)
        torch_f16 = folded(images)
        torch_f32 = f32_logits(reference, images)
    assert ours.shape == torch_f16.shape == (batch, 1000), f"{tuple(ours.shape)}"
    errors = [relative_error(ours, torch_f16), relative_error(ours, torch_f32),
              relative_error(torch_f16, torch_f32)]
    print(f"    batch {batch} {height}x{width} {options or ''}: relative error of the logits "
          f"{errors[0]:.2e} vs torch f16 folded, {errors[1]:.2e} vs f32 unfolded (torch f16 "
          f"folded vs f32: {errors[2]:.2e})")
    assert errors[0] < TOLERANCE and errors[1] < TOLERANCE, f"{errors[0]:.2e}, {errors[1]:.2e}"
    # the logits must not be nearly constant (a degenerate network would match anything)
    spread = (torch_f32 - torch_f32.mean(dim=1, keepdim=True)).norm() / torch_f32.norm()
    assert spread > 0.1, f"the logits barely vary across classes ({spread:.2e})"


def test_batch_norm_folding_is_exact_in_f32():
    """Folded in f32, the model computes what the model with batch norm computes."""
    reference, _, _ = models()
    folded32 = sketch_resnet.fold_batch_norms(reference)
    images = sketch_resnet.random_images(2)
    with torch.no_grad():
        error = relative_error(f32_logits(folded32, images), f32_logits(reference, images))
    print(f"    folded f32 vs unfolded f32: {error:.2e}")
    assert error < 1e-4, f"{error:.2e}"


def test_resnet50_batch_2():
    check(2)


def test_resnet50_batch_32():
    check(32)


def test_resnet50_ragged_input():
    check(3, 97, 113)


def test_resnet50_each_tile_everywhere():
    check(2, 97, 113, tiles="large")
    check(2, 97, 113, tiles="small")


def test_resnet50_unpadded_stem():
    check(2, stem_channels=3)
