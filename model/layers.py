"""The Transformer's building blocks (§3.1–3.5): positional encoding, feed-forward, the sublayer connection,
encoder and decoder layers, key/value cache."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.attention import MultiHeadAttention
from model.config import ModelConfig
from model.intervention import PLAIN_LAYER, LayerIntervention


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


Sublayer = Callable[[Tensor], tuple[Tensor, Tensor | None]]  # (B, T, d_model) -> output, attention weights or None


class SublayerConnection(nn.LayerNorm):
    """The residual connection around one sublayer (attention or feed-forward), with its LayerNorm and dropout.

    Pre-norm: x + Dropout(Sublayer(LayerNorm(x))), which trains stably without warm-up tricks (Xiong et al. 2020)
    and needs a final LayerNorm after the stack (transformer.py); post-norm, the paper's: LayerNorm(x +
    Dropout(Sublayer(x))). The module is that LayerNorm: its γ, β are ``weight``, ``bias``, and ``norm`` applies it.
    """

    def __init__(self, d_model: int, dropout: float, pre_norm: bool) -> None:
        super().__init__(d_model)
        self.pre_norm = pre_norm
        self.dropout = nn.Dropout(dropout)

    def norm(self, x: Tensor) -> Tensor:
        return super().forward(x)

    def sublayer_input(self, x: Tensor) -> Tensor:
        """What the sublayer reads: LayerNorm(x) pre-norm, x post-norm."""
        return self.norm(x) if self.pre_norm else x

    def residual(self, x: Tensor, out: Tensor) -> Tensor:
        """The sublayer's output ``out`` added back onto ``x`` (and normed, post-norm)."""
        x = x + self.dropout(out)
        return x if self.pre_norm else self.norm(x)

    def forward(self, x: Tensor, sublayer: Sublayer) -> tuple[Tensor, Tensor | None]:  # type: ignore[override]
        """x: (B, T, d_model). Returns the new x and the sublayer's attention weights (None for feed-forward)."""
        out, weights = sublayer(self.sublayer_input(x))
        return self.residual(x, out), weights


class EncoderLayer(nn.Module):
    """Self-attention over the source, then feed-forward, each in a sublayer connection; the connections keep their
    LayerNorms' names (``self_attn_norm``, ``ffn_norm``): the weights' keys."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c, pre_norm = config, config.norm == "pre"
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_norm = SublayerConnection(c.d_model, c.dropout, pre_norm)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.ffn_norm = SublayerConnection(c.d_model, c.dropout, pre_norm)

    def forward(
        self, x: Tensor, src_mask: Tensor, what: LayerIntervention = PLAIN_LAYER
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, S, d_model); src_mask: (B, 1, 1, S). Returns x and, if ``what.self_weights``, (B, H, S, S)."""
        x, weights = self.self_attn_norm(x, lambda h: self.self_attn(h, h, src_mask, what.self_weights, what.self_gate))
        x, _ = self.ffn_norm(x, lambda h: (self.ffn(h), None))
        return x, weights


@dataclass(eq=False)
class KVCache:
    """What one decoder layer keeps between decoding steps: keys/values of the target prefix, in a buffer allocated
    once for the longest output and written in place, and of the source, projected once per sentence."""

    buffer: Tensor  # (2, B, H, capacity, D): keys, values of target positions; only the first ``length`` are set
    memory_kv: Tensor  # (2, B, H, S, D): keys, values of the encoder memory for cross-attention
    length: int = 0  # target positions written so far

    def extend(self, kv: Tensor) -> Tensor:
        """Write ``kv`` (2, B, H, t, D) of the next t positions in place; return all so far (2, B, H, length, D)."""
        end = self.length + kv.size(3)
        if end > self.buffer.size(3):
            raise ValueError(f"key/value cache holds {self.buffer.size(3)} positions, step {end} asked for more")
        self.buffer[:, :, :, self.length : end] = kv
        self.length = end
        return self.buffer[:, :, :, :end]

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (B,) in place: beam search continues the hypotheses chosen at this step."""
        self.buffer[:, :, :, : self.length] = self.buffer[:, :, :, : self.length].index_select(1, index)
        self.memory_kv = self.memory_kv.index_select(1, index)


class DecoderLayer(nn.Module):
    """Masked self-attention over the target prefix, cross-attention to the source, feed-forward, each in a
    sublayer connection (named after its LayerNorm, as in EncoderLayer)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c, pre_norm = config, config.norm == "pre"
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_norm = SublayerConnection(c.d_model, c.dropout, pre_norm)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.cross_attn_norm = SublayerConnection(c.d_model, c.dropout, pre_norm)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.ffn_norm = SublayerConnection(c.d_model, c.dropout, pre_norm)

    def start_cache(self, memory: Tensor, capacity: int) -> KVCache:
        """An empty cache for up to ``capacity`` target positions; cross keys/values of ``memory`` (B, S, d_model)."""
        memory_kv = self.cross_attn.project_kv(memory)
        _, b, h, _, d = memory_kv.shape
        return KVCache(memory_kv.new_empty(2, b, h, capacity, d), memory_kv)

    def forward(
        self,
        y: Tensor,
        memory: Tensor | None,
        src_mask: Tensor,
        tgt_mask: Tensor | None,
        cache: KVCache | None = None,
        what: LayerIntervention = PLAIN_LAYER,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """y: (B, T, d_model), the decoder input at the T positions after those in ``cache`` (all of them without one).

        Returns y, self weights (B, H, T, past + T) if ``what.self_weights`` and cross weights (B, H, T, S) if
        ``what.cross_weights``. ``memory`` (B, S, d_model) is needed only without a cache; ``tgt_mask`` (1 or B, 1,
        T, past + T).
        """
        y, self_w = self.self_attn_norm(y, lambda h: self.masked_self_attention(h, tgt_mask, cache, what))
        y, cross_w = self.cross_attn_norm(y, lambda h: self.cross_attention(h, memory, src_mask, cache, what))
        y, _ = self.ffn_norm(y, lambda h: (self.ffn(h), None))
        return y, self_w, cross_w

    def masked_self_attention(
        self, h: Tensor, tgt_mask: Tensor | None, cache: KVCache | None, what: LayerIntervention
    ) -> tuple[Tensor, Tensor | None]:
        """Attention over the prefix: the new positions' keys/values join the cached ones."""
        q, kv = self.self_attn.project_qkv(h)  # (B, H, T, D), (2, B, H, T, D)
        if cache is not None:
            kv = cache.extend(kv)  # (2, B, H, past + T, D)
        return self.self_attn.attend(q, kv, tgt_mask, what.self_weights, what.self_gate)

    def cross_attention(
        self, h: Tensor, memory: Tensor | None, src_mask: Tensor, cache: KVCache | None, what: LayerIntervention
    ) -> tuple[Tensor, Tensor | None]:
        """Attention over the source; its keys/values come from the cache when decoding step by step."""
        memory_kv = cache.memory_kv if cache is not None else self.cross_attn.project_kv(memory)  # (2, B, H, S, D)
        q = self.cross_attn.project_q(h)  # (B, H, T, D)
        return self.cross_attn.attend(q, memory_kv, src_mask, what.cross_weights, what.cross_gate)
