"""A transformers Llama decoder layer with its GEMMs and attention on sketch kernels.

examples/llama/sketch_llama.py builds the layer (hidden 2048, 16 heads, 4 KV
heads, head dim 128, MLP 5632, bf16, random weights) and SketchDecoderLayer
over the same weights. For sequence lengths 1, 77 and 4096 the output must
match the eager layer's (torch SDPA): relative error (Frobenius norm) < 2e-2
on the output and on what the layer adds to its input. Also under
torch.compile with fullgraph=True (no graph break through the sketch ops).
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "llama"))

import sketch_llama  # noqa: E402


def relative_error(out, ref):
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all(), "non-finite elements"
    return ((out - ref).norm() / ref.norm()).item()


def check_layer(fast, layer, rotary, config, seq, batch=1):
    x, position_embeddings = sketch_llama.make_inputs(rotary, batch, seq, config.hidden_size)
    with torch.no_grad():
        ref = sketch_llama.run_layer(layer, x, position_embeddings)
        out = fast(x, position_embeddings)
    assert out.shape == ref.shape, f"{tuple(out.shape)} != {tuple(ref.shape)}"
    whole, update = relative_error(out, ref), relative_error(out - x, ref - x)
    print(f"    seq {seq}: relative error {whole:.2e} (output), {update:.2e} (the layer's update)")
    assert whole < 2e-2 and update < 2e-2, f"seq {seq}: {whole:.2e}, {update:.2e}"


def test_decoder_layer_matches_eager():
    config = sketch_llama.small_config()
    layer, rotary = sketch_llama.make_layer(config)
    fast = sketch_llama.SketchDecoderLayer(layer)
    for seq in (1, 77, 4096):
        check_layer(fast, layer, rotary, config, seq)
    check_layer(fast, layer, rotary, config, 77, batch=3)


def test_decoder_layer_under_torch_compile():
    config = sketch_llama.small_config()
    layer, rotary = sketch_llama.make_layer(config)
    fast = sketch_llama.SketchDecoderLayer(layer)
    compiled = torch.compile(fast, fullgraph=True)
    check_layer(compiled, layer, rotary, config, 77)
    torch._dynamo.reset()
