"""The encoder and decoder layers compute the paper's formulas (§3.1–3.3), written out here plainly on their weights."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import tiny_config
from torch import Tensor

from model.attention import MultiHeadAttention, causal_mask, padding_mask
from model.intervention import LayerIntervention
from model.layers import FeedForward, SublayerConnection
from model.transformer import Transformer
from translate.translator import DEFAULT_MODEL, Translator


def layer_norm(x: Tensor, norm: SublayerConnection) -> Tensor:
    """γ ⊙ (x − mean x) / √(var x + ε) + β over the last dimension."""
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return norm.weight * (x - mean) / torch.sqrt(var + norm.eps) + norm.bias


def attention(x: Tensor, source: Tensor, mask: Tensor, a: MultiHeadAttention, gate: Tensor) -> tuple[Tensor, Tensor]:
    """MultiHead(Q, K, V) = Concat(head_1 … head_H) W_O, head_h = softmax(Q W_Q^h (K W_K^h)ᵀ / √d_head) V W_V^h;
    head h's output times gate[h]. x (B, T, d_model) queries, source (B, S, d_model) keys and values."""
    w_q, w_k, w_v = a.in_proj.weight.split(a.d_model)
    b_q, b_k, b_v = a.in_proj.bias.split(a.d_model)
    q, k, v = x @ w_q.T + b_q, source @ w_k.T + b_k, source @ w_v.T + b_v
    heads, weights = [], []
    for h in range(a.n_heads):
        cols = slice(h * a.d_head, (h + 1) * a.d_head)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(a.d_head)  # (B, T, S)
        alpha = scores.masked_fill(~mask[:, 0], float("-inf")).softmax(-1)
        heads.append(gate[h] * alpha @ v[..., cols])
        weights.append(alpha)
    return torch.cat(heads, -1) @ a.out_proj.weight.T + a.out_proj.bias, torch.stack(weights, 1)


def feed_forward(x: Tensor, f: FeedForward) -> Tensor:
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2."""
    return torch.relu(x @ f.w1.weight.T + f.w1.bias) @ f.w2.weight.T + f.w2.bias


def sublayer(x: Tensor, norm: SublayerConnection, out_of: object) -> tuple[Tensor, object]:
    """Pre-norm x + Sublayer(LayerNorm(x)); post-norm, the paper's, LayerNorm(x + Sublayer(x))."""
    if norm.pre_norm:
        out, weights = out_of(layer_norm(x, norm))
        return x + out, weights
    out, weights = out_of(x)
    return layer_norm(x + out, norm), weights


def post_norm_model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(tiny_config(norm="post")).eval()


@pytest.fixture(scope="module", params=["shipped, pre-norm", "tiny, post-norm"])
def model(request: pytest.FixtureRequest) -> Transformer:
    return Translator.load(DEFAULT_MODEL).model if request.param.startswith("shipped") else post_norm_model()


def inputs(model: Transformer) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Embedded source (2, 7, d_model) and target (2, 5, d_model), the second of each padded; their masks; src."""
    g = torch.Generator().manual_seed(1)
    vocab = min(model.config.src_vocab_size, model.config.tgt_vocab_size)
    src, tgt = torch.randint(4, vocab, (2, 7), generator=g), torch.randint(4, vocab, (2, 5), generator=g)
    src[1, 4:], tgt[1, 3:] = model.config.pad_id, model.config.pad_id
    src_mask = padding_mask(src, model.config.pad_id)  # (B, 1, 1, S)
    tgt_mask = causal_mask(5) & padding_mask(tgt, model.config.pad_id)  # (B, 1, T, T)
    x = model.embed(src, model.src_embed, model.src_pos)
    y = model.embed(tgt, model.tgt_embed, model.tgt_pos)
    return x, y, src_mask, tgt_mask, src


def gate(model: Transformer, off: int) -> Tensor:
    """(H,) gates with head ``off`` switched off and another halved."""
    g = torch.ones(model.config.n_heads)
    g[off], g[(off + 1) % len(g)] = 0.0, 0.5
    return g


def close(a: Tensor, b: Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-5, atol=1e-5)  # float32 rounding: ~1e-6 measured


@torch.inference_mode()
@pytest.mark.parametrize("need_weights", [True, False])
def test_the_encoder_layer_is_self_attention_then_feed_forward(model: Transformer, need_weights: bool) -> None:
    x, _, src_mask, _, _ = inputs(model)
    layer, g = model.encoder_layers[0], gate(model, 1)
    out, weights = layer(x, src_mask, LayerIntervention(self_gate=g, self_weights=need_weights))
    h, alpha = sublayer(x, layer.self_attn_norm, lambda h: attention(h, h, src_mask, layer.self_attn, g))
    h, _ = sublayer(h, layer.ffn_norm, lambda h: (feed_forward(h, layer.ffn), None))
    assert close(out, h)
    assert (weights is not None) == need_weights
    if need_weights:
        assert close(weights, alpha)


@torch.inference_mode()
@pytest.mark.parametrize("need_weights", [True, False])
def test_the_decoder_layer_is_masked_self_attention_cross_attention_then_feed_forward(
    model: Transformer, need_weights: bool
) -> None:
    _, y, src_mask, tgt_mask, src = inputs(model)
    memory = model.encode(src).memory  # (B, S, d_model)
    layer, own, cross = model.decoder_layers[-1], gate(model, 0), gate(model, 2)
    what = LayerIntervention(own, cross, need_weights, need_weights)
    out, self_w, cross_w = layer(y, memory, src_mask, tgt_mask, None, what)
    h, self_alpha = sublayer(y, layer.self_attn_norm, lambda h: attention(h, h, tgt_mask, layer.self_attn, own))
    h, cross_alpha = sublayer(
        h, layer.cross_attn_norm, lambda h: attention(h, memory, src_mask, layer.cross_attn, cross)
    )
    h, _ = sublayer(h, layer.ffn_norm, lambda h: (feed_forward(h, layer.ffn), None))
    assert close(out, h)
    assert (self_w is not None, cross_w is not None) == (need_weights, need_weights)
    if need_weights:
        assert close(self_w, self_alpha)
        assert close(cross_w, cross_alpha)
