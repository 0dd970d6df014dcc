"""A transformers Llama decoder layer whose GEMMs and attention are sketch kernels.

    layer = LlamaDecoderLayer(config, layer_idx=0)          # transformers' own
    fast = SketchDecoderLayer(layer)                        # same weights
    out = fast(hidden_states, position_embeddings=(cos, sin))

The kernels are examples/llama/decoder_layer.sketch, compiled by the sketch
package: the q/k/v projections as one GEMM over the concatenated weights, the
attention (causal, grouped-query) and the output projection with the residual
add fused; the MLP's up projection, its gate projection with SiLU(gate) * up
fused, and the down projection with the residual add fused. RMSNorm and the
rotary embedding stay the layer's own torch code: under torch.compile(fast) they
fuse around the kernels (bench/bench_llama_layer.py times both forms).
"""
import os

import torch

import sketch

HERE = os.path.dirname(os.path.abspath(__file__))
SKETCH = os.path.join(HERE, "decoder_layer.sketch")


def apply_rotary(x, cos, sin):
    """Llama's rotary embedding of x [B, heads, S, D] (cos, sin: [B, S, D])."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class SketchDecoderLayer(torch.nn.Module):
    """The forward of a LlamaDecoderLayer (no KV cache, causal) on sketch kernels."""

    def __init__(self, layer, kernels=None):
        super().__init__()
        attn, mlp = layer.self_attn, layer.mlp
        self.kernels = kernels or sketch.compile(SKETCH)
        self.input_layernorm = layer.input_layernorm
        self.post_attention_layernorm = layer.post_attention_layernorm
        config = attn.config
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = attn.head_dim
        self.scaling = float(attn.scaling)
        with torch.no_grad():
            self.w_qkv = torch.cat([attn.q_proj.weight, attn.k_proj.weight,
                                    attn.v_proj.weight]).contiguous()
        self.w_o = attn.o_proj.weight
        self.w_gate, self.w_up = mlp.gate_proj.weight, mlp.up_proj.weight
        self.w_down = mlp.down_proj.weight

    def attention(self, x, cos, sin):
        """The attention block's output projection input: [B * S, H * D]."""
        batch, seq, _ = x.shape
        k = self.kernels
        qkv = k.llama_linear(x.view(batch * seq, -1), self.w_qkv)
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, key, value = qkv.view(batch, seq, -1).split([q_size, kv_size, kv_size], dim=-1)
        q = apply_rotary(q.view(batch, seq, self.heads, -1).transpose(1, 2), cos, sin)
        key = apply_rotary(key.view(batch, seq, self.kv_heads, -1).transpose(1, 2), cos, sin)
        value = value.view(batch, seq, self.kv_heads, -1).transpose(1, 2)
        out = k.llama_attention(q.contiguous(), key.contiguous(), value.contiguous(),
                          scale=self.scaling)
        return out.transpose(1, 2).reshape(batch * seq, q_size)

    def forward(self, hidden_states, position_embeddings, **_):
        batch, seq, hidden = hidden_states.shape
        k = self.kernels
        cos, sin = position_embeddings
        residual = hidden_states.reshape(batch * seq, hidden)
        attn = self.attention(self.input_layernorm(hidden_states), cos, sin)
        hidden_states = k.llama_residual(attn, self.w_o, R=residual)
        normed = self.post_attention_layernorm(hidden_states)
        up = k.llama_linear(normed, self.w_up)
        gated = k.llama_gate_up(normed, self.w_gate, U=up)
        out = k.llama_residual(gated, self.w_down, R=hidden_states)
        return out.view(batch, seq, hidden)


def small_config():
    """The decoder layer of the tests and the benchmark: hidden 2048, 16 heads, 4 KV heads,
    head dim 128, MLP 5632 (random weights; nothing is downloaded)."""
    from transformers import LlamaConfig
    config = LlamaConfig(hidden_size=2048, num_attention_heads=16, num_key_value_heads=4,
                         head_dim=128, intermediate_size=5632, num_hidden_layers=1,
                         max_position_embeddings=8192)
    config._attn_implementation = "sdpa"
    return config


def make_layer(config, dtype=torch.bfloat16, seed=0):
    """transformers' LlamaDecoderLayer with random weights on the GPU, and its rotary
    embedding. The RMSNorm weights (ones when created) are drawn at random too."""
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    torch.manual_seed(seed)
    layer = LlamaDecoderLayer(config, layer_idx=0).to("cuda", dtype).eval()
    with torch.no_grad():
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.weight.uniform_(0.5, 1.5)
    return layer, LlamaRotaryEmbedding(config).to("cuda")


def make_inputs(rotary, batch, seq, hidden, dtype=torch.bfloat16):
    """Random hidden states [batch, seq, hidden] and their (cos, sin)."""
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=dtype)
    positions = torch.arange(seq, device="cuda")[None].expand(batch, -1)
    return x, rotary(x, positions)


def run_layer(layer, x, position_embeddings):
    """A decoder layer's output (transformers may return it alone or in a tuple)."""
    out = layer(x, position_embeddings=position_embeddings)
    return out[0] if isinstance(out, tuple) else out
