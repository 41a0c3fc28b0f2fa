"""The Transformer's building blocks: positional encoding, feed-forward, encoder and decoder layers."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from model.attention import MultiHeadAttention


def sinusoidal_table(n_positions: int, d_model: int) -> Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(...): (n_positions, d_model)."""
    position = torch.arange(n_positions, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(n_positions, d_model)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: d_model // 2])
    return table


class PositionalEncoding(nn.Module):
    """Adds a position signal (fixed sinusoids or a learned table) to token embeddings."""

    def __init__(self, n_positions: int, d_model: int, kind: str) -> None:
        super().__init__()
        self.kind = kind
        if kind == "learned":
            self.table = nn.Parameter(torch.randn(n_positions, d_model) * d_model**-0.5)
        else:
            self.register_buffer("table", sinusoidal_table(n_positions, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model); ``offset`` is the position of x[:, 0] (for step-by-step decoding)."""
        length = x.size(1)
        if offset + length > self.table.size(0):
            raise ValueError(f"sequence of {offset + length} tokens exceeds max_positions={self.table.size(0)}")
        return x + self.table[offset : offset + length]


class FeedForward(nn.Module):
    """Position-wise FFN(x) = W2 ReLU(W1 x)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(self.dropout(torch.relu(self.w1(x))))


class Sublayer(nn.Module):
    """Residual around a sublayer with LayerNorm before (pre-norm) or after (post-norm, the paper's)."""

    def __init__(self, d_model: int, dropout: float, norm: str) -> None:
        super().__init__()
        self.pre_norm = norm == "pre"
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def normed_input(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.pre_norm else x

    def residual(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        y = x + self.dropout(sublayer_out)
        return y if self.pre_norm else self.norm(y)


class EncoderLayer(nn.Module):
    """Self-attention over the source, then feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attn_dropout: float, norm: str):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.attn_sub = Sublayer(d_model, dropout, norm)
        self.ffn_sub = Sublayer(d_model, dropout, norm)

    def forward(self, x: Tensor, src_mask: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x: (B, S, d_model); src_mask: (B, 1, 1, S). Returns x and weights (B, H, S, S) or None."""
        h = self.attn_sub.normed_input(x)
        attn_out, weights = self.self_attn(h, h, src_mask, need_weights)
        x = self.attn_sub.residual(x, attn_out)
        x = self.ffn_sub.residual(x, self.ffn(self.ffn_sub.normed_input(x)))
        return x, weights


class LayerCache(NamedTuple):
    """Keys/values one decoder layer keeps while decoding; each (B, H, length, D)."""

    self_k: Tensor  # grows by one position per step
    self_v: Tensor
    cross_k: Tensor  # computed once per sentence from the encoder memory
    cross_v: Tensor

    def select(self, index: Tensor) -> LayerCache:
        """Reorder the batch (beam search keeps the hypotheses chosen at this step)."""
        return LayerCache(*(t.index_select(0, index) for t in self))


class DecoderOutput(NamedTuple):
    y: Tensor
    self_weights: Tensor | None  # (B, H, T, T_visible)
    cross_weights: Tensor | None  # (B, H, T, S)
    cache: LayerCache | None


class DecoderLayer(nn.Module):
    """Masked self-attention over the target prefix, cross-attention to the source, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attn_dropout: float, norm: str):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.self_sub = Sublayer(d_model, dropout, norm)
        self.cross_sub = Sublayer(d_model, dropout, norm)
        self.ffn_sub = Sublayer(d_model, dropout, norm)

    def empty_cache(self, memory: Tensor) -> LayerCache:
        """Cache before the first step: no target keys yet, cross keys/values from ``memory`` (B, S, d_model)."""
        cross_k, cross_v = self.cross_attn.project_kv(memory)
        b, h, _, d = cross_k.shape
        empty = cross_k.new_zeros(b, h, 0, d)
        return LayerCache(empty, empty, cross_k, cross_v)

    def forward(
        self,
        y: Tensor,
        memory: Tensor | None,
        tgt_mask: Tensor | None,
        src_mask: Tensor,
        need_weights: bool = False,
        cache: LayerCache | None = None,
    ) -> DecoderOutput:
        """y: (B, T, d_model) decoder input; tgt_mask (B or 1, 1, T, T) or None when decoding with a cache.

        Without a cache this is the full teacher-forced pass; with one, ``y`` holds only the new
        position(s) and keys/values of earlier positions come from the cache (no future exists).
        """
        h = self.self_sub.normed_input(y)
        if cache is None:
            k, v = self.self_attn.project_kv(h)
            cross_k, cross_v = self.cross_attn.project_kv(memory)
        else:
            k_new, v_new = self.self_attn.project_kv(h)
            k = torch.cat([cache.self_k, k_new], dim=2)  # (B, H, t+1, D)
            v = torch.cat([cache.self_v, v_new], dim=2)
            cross_k, cross_v = cache.cross_k, cache.cross_v
        attn_out, self_w = self.self_attn.attend(h, k, v, tgt_mask, need_weights)
        y = self.self_sub.residual(y, attn_out)
        cross_out, cross_w = self.cross_attn.attend(
            self.cross_sub.normed_input(y), cross_k, cross_v, src_mask, need_weights
        )
        y = self.cross_sub.residual(y, cross_out)
        y = self.ffn_sub.residual(y, self.ffn(self.ffn_sub.normed_input(y)))
        new_cache = None if cache is None else LayerCache(k, v, cross_k, cross_v)
        return DecoderOutput(y, self_w, cross_w, new_cache)
