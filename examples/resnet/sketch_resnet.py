"""torchvision's ResNet-50 with every convolution on sketch kernels.

    reference, folded = make_models()          # f32 with batch norm; folded f16 channels_last
    fast = SketchResNet50(folded)              # the same weights on examples/resnet/resnet50.sketch
    logits = fast(images)                      # images: f16 [N, 3, H, W]

make_models builds torchvision.models.resnet50(weights=None) with random
weights and random batch-norm affine parameters (small weights on each
residual branch's last one, as trained ResNets have), whose running statistics
are measured on random images (so they are far from mean 0, variance 1 and the
activations stay in f16's range), and a copy with every batch norm folded into
the convolution before it (weight scaled per output channel, a bias added),
converted to f16 and channels_last: the model torch runs in the tests and the
benchmark. SketchResNet50 runs each convolution with its bias, ReLU and (the
last one of each bottleneck) residual add as one kernel; the activations are
NHWC tensors (a channels_last tensor's memory) and the filters KRSC. Max pool,
average pool and the classifier stay torch.

The stem's input has 3 channels; the kernels' 16-byte loads need C % 8 == 0,
so the image is padded to 8 channels with zeros (and the stem's filter with
zero channels). stem_channels=3 runs the unpadded image on the element path.

Each form is compiled twice: as written (the compiler's default tile, 128 x 128)
and with `tile BM = 64, BN = 64, BK = 64` (BK = 64: Hopper's wgmma path steps 64
anyway, and on sm_80 the 64 x 64 x 32 tile spills in the element path); a
convolution uses the large tile when its output channels fill whole 128-wide
tiles and the grid has at least one block per SM, the small one otherwise
(layer 1's 64 channels, the 7x7 and 14x14 layers of small batches).
"""
import concurrent.futures
import os
import re

import torch
import torch.nn.functional as F

import sketch

HERE = os.path.dirname(os.path.abspath(__file__))
SKETCH = os.path.join(HERE, "resnet50.sketch")
SMALL_TILE = "tile BM = 64, BN = 64, BK = 64"
# The weights of each residual branch's last batch norm. Trained ResNets have small ones
# there (torchvision's zero_init_residual starts them at 0); drawn near 1, the random
# network is chaotic: f16 rounding alone moves torch's own logits 3% away from f32's.
RESIDUAL_BN_WEIGHTS = (0.2, 0.6)

# (filter size, stride, padding, epilogue) -> the kernel of resnet50.sketch
KERNELS = {
    (7, 2, 3, "relu"): "resnet_conv7x7s2_bias_relu",
    (1, 1, 0, "relu"): "resnet_conv1x1_bias_relu",
    (3, 1, 1, "relu"): "resnet_conv3x3_bias_relu",
    (3, 2, 1, "relu"): "resnet_conv3x3s2_bias_relu",
    (1, 1, 0, "add_relu"): "resnet_conv1x1_bias_add_relu",
    (1, 1, 0, "none"): "resnet_conv1x1_bias",
    (1, 2, 0, "none"): "resnet_conv1x1s2_bias",
}


def with_tile(source, directive, suffix):
    """The sketch `source` with `directive` on every kernel and `suffix` on every name."""
    source = re.sub(r"^kernel (\w+)\(", lambda m: f"kernel {m.group(1)}{suffix}(", source,
                    flags=re.M)
    return re.sub(r"^(    for )", f"    {directive}\n\\1", source, flags=re.M)


def compile_kernels(arch=None):
    """(the kernels as written, the same with the small tile, names suffixed _small)."""
    with open(SKETCH) as f:
        source = f.read()
    # two builds at once: each is mostly nvcc, which runs outside the interpreter's lock
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        large = pool.submit(sketch.compile, SKETCH, arch=arch)
        small = pool.submit(sketch.compile, with_tile(source, SMALL_TILE, "_small"), arch=arch)
        return large.result(), small.result()


# -- the models ----------------------------------------------------------------------------

def conv_bn_pairs(model):
    """(parent module, conv attribute, batch-norm attribute) for every conv of a ResNet."""
    yield model, "conv1", "bn1"
    for layer in layers(model):
        for block in layer:
            for i in (1, 2, 3):
                yield block, f"conv{i}", f"bn{i}"
            if block.downsample is not None:
                yield block.downsample, "0", "1"


def layers(model):
    return (model.layer1, model.layer2, model.layer3, model.layer4)


def randomize_batch_norms(model, calibration_batch=8, size=224):
    """Random affine parameters (torch's global generator), and running statistics measured
    on random images (train mode, cumulative average over two batches), so that folding
    them is not trivial. Weights are drawn from [0.5, 1.5), except those of each residual
    branch's last batch norm, from RESIDUAL_BN_WEIGHTS."""
    device = next(model.parameters()).device
    residual = {id(block.bn3) for layer in layers(model) for block in layer}
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                low, high = RESIDUAL_BN_WEIGHTS if id(module) in residual else (0.5, 1.5)
                module.weight.copy_(torch.rand(module.num_features) * (high - low) + low)
                module.bias.copy_(torch.rand(module.num_features) * 0.4 - 0.2)
                module.reset_running_stats()
                module.momentum = None
        model.train()
        for _ in range(2):
            model(torch.randn(calibration_batch, 3, size, size).to(device))
    model.eval()


def fold_batch_norm(conv, bn):
    """Replaces conv's weight and bias by those of bn(conv(x)) in eval mode (in f64)."""
    with torch.no_grad():
        scale = bn.weight.double() / torch.sqrt(bn.running_var.double() + bn.eps)
        bias = bn.bias.double() - bn.running_mean.double() * scale
        if conv.bias is not None:
            bias += conv.bias.double() * scale
        weight = conv.weight.double() * scale[:, None, None, None]
        conv.weight = torch.nn.Parameter(weight.to(conv.weight.dtype))
        conv.bias = torch.nn.Parameter(bias.to(conv.weight.dtype))


def fold_batch_norms(model):
    """A copy of a ResNet with each batch norm folded into its conv (and made Identity)."""
    import copy
    folded = copy.deepcopy(model)
    for parent, conv_name, bn_name in conv_bn_pairs(folded):
        fold_batch_norm(getattr(parent, conv_name), getattr(parent, bn_name))
        setattr(parent, bn_name, torch.nn.Identity())
    return folded


def make_models(seed=0, device="cuda"):
    """(torchvision's resnet50 with random weights and batch norm, f32, eval; the same with
    the batch norms folded, f16, channels_last, eval)."""
    import torchvision
    torch.manual_seed(seed)
    reference = torchvision.models.resnet50(weights=None).to(device)
    randomize_batch_norms(reference)
    folded = fold_batch_norms(reference).half().to(memory_format=torch.channels_last).eval()
    for p in list(reference.parameters()) + list(folded.parameters()):
        p.requires_grad_(False)
    return reference, folded


def random_images(batch, height=224, width=224, device="cuda"):
    """f16 images [batch, 3, height, width], channels_last."""
    images = torch.randn(batch, 3, height, width, device=device).half()
    return images.contiguous(memory_format=torch.channels_last)


# -- the forward on sketch kernels ---------------------------------------------------------

def nhwc(x):
    """The NHWC tensor [N, H, W, C] of a channels_last [N, C, H, W] tensor's memory."""
    return x.contiguous(memory_format=torch.channels_last).permute(0, 2, 3, 1)


class SketchConv:
    """One convolution (folded batch norm) with its epilogue, on the kernel of its form."""

    def __init__(self, conv, epilogue, modules, in_channels=None):
        if conv.groups != 1 or conv.dilation != (1, 1) or conv.bias is None:
            raise ValueError(f"{conv}: no sketch kernel (groups, dilation or no bias)")
        r, s = conv.kernel_size
        key = (r, conv.stride[0], conv.padding[0], epilogue)
        if r != s or conv.stride[0] != conv.stride[1] or conv.padding[0] != conv.padding[1] \
                or key not in KERNELS:
            raise ValueError(f"{conv}: no kernel in resnet50.sketch for {key}")
        large, small = modules
        self.large, self.small = getattr(large, KERNELS[key]), getattr(small, KERNELS[key] + "_small")
        self.module, self.epilogue = conv, epilogue
        self.size, self.stride, self.pad = r, conv.stride[0], conv.padding[0]
        weight = conv.weight.detach().permute(0, 2, 3, 1)  # KRSC
        if in_channels is not None and in_channels != weight.shape[-1]:  # zero channels
            weight = F.pad(weight, (0, in_channels - weight.shape[-1]))
        self.weight = weight.contiguous()
        self.bias = conv.bias.detach().contiguous()
        self.out_channels = self.weight.shape[0]
        self.poison = False  # tests: fill each output with NaN before the kernel writes it

    def out_shape(self, x):
        n, h, w, _ = x.shape
        p = (h + 2 * self.pad - self.size) // self.stride + 1
        q = (w + 2 * self.pad - self.size) // self.stride + 1
        return n, p, q, self.out_channels

    def kernel_for(self, shape):
        """The sketch as written: the compiler's own tile, whose host function launches its
        128 x 64 variant where K <= 64 (on an H100 as fast as the small tile or faster on
        every layer at batch 32 and 128; README.md). `shape` is the output's."""
        return self.large

    def pick(self, shape, tiles):
        if tiles == "large":
            return self.large
        if tiles == "small":
            return self.small
        return self.kernel_for(shape)

    def __call__(self, x, residual=None, tiles="auto"):
        shape = self.out_shape(x)
        kernel = self.pick(shape, tiles)
        y = torch.full(shape, float("nan"), dtype=x.dtype, device=x.device) if self.poison else None
        if residual is None:
            return kernel(X=x, Wt=self.weight, bias=self.bias, Y=y)
        return kernel(X=x, Wt=self.weight, bias=self.bias, R=residual, Y=y)


class SketchBottleneck:
    def __init__(self, block, modules):
        self.conv1 = SketchConv(block.conv1, "relu", modules)
        self.conv2 = SketchConv(block.conv2, "relu", modules)
        self.conv3 = SketchConv(block.conv3, "add_relu", modules)
        self.downsample = (SketchConv(block.downsample[0], "none", modules)
                           if block.downsample is not None else None)

    def convs(self):
        return [c for c in (self.conv1, self.conv2, self.conv3, self.downsample) if c]

    def __call__(self, x, tiles):
        identity = x if self.downsample is None else self.downsample(x, tiles=tiles)
        out = self.conv2(self.conv1(x, tiles=tiles), tiles=tiles)
        return self.conv3(out, residual=identity, tiles=tiles)


class SketchResNet50(torch.nn.Module):
    """The forward of a folded f16 torchvision ResNet (fold_batch_norms) on sketch kernels.

    tiles: "auto" (SketchConv.kernel_for), "large" (the sketch as written) or "small"."""

    def __init__(self, folded, kernels=None, stem_channels=8, tiles="auto"):
        super().__init__()
        if tiles not in ("auto", "large", "small"):
            raise ValueError(f"tiles must be auto, large or small, not {tiles!r}")
        modules = kernels or compile_kernels()
        self.stem_channels, self.tiles = stem_channels, tiles
        self.stem = SketchConv(folded.conv1, "relu", modules, in_channels=stem_channels)
        self.maxpool = folded.maxpool
        self.blocks = [SketchBottleneck(block, modules)
                       for layer in layers(folded)
                       for block in layer]
        self.fc_weight, self.fc_bias = folded.fc.weight.detach(), folded.fc.bias.detach()

    def convs(self):
        return [self.stem] + [c for block in self.blocks for c in block.convs()]

    def set_poison(self, poison):
        for conv in self.convs():
            conv.poison = poison

    def stem_input(self, images):
        """The images as NHWC with stem_channels channels (zeros past the third)."""
        x = images.permute(0, 2, 3, 1)
        if self.stem_channels == x.shape[-1]:
            return x.contiguous()
        return F.pad(x, (0, self.stem_channels - x.shape[-1])).contiguous()

    def forward(self, images):
        x = self.stem(self.stem_input(images), tiles=self.tiles)
        x = nhwc(self.maxpool(x.permute(0, 3, 1, 2)))
        for block in self.blocks:
            x = block(x, self.tiles)
        features = x.mean(dim=(1, 2))
        return F.linear(features, self.fc_weight, self.fc_bias)
