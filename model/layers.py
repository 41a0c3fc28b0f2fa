"""The Transformer's building blocks: positional encoding, feed-forward, encoder and decoder layers, key/value cache.

Every sublayer (attention or feed-forward) sits in a residual connection with a LayerNorm, in one of two orders:
post-norm, the paper's, LayerNorm(x + Sublayer(x)); or pre-norm, x + Sublayer(LayerNorm(x)), which trains more
stably without warm-up tricks (Xiong et al. 2020) and needs a final LayerNorm after the stack (transformer.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.attention import MultiHeadAttention
from model.config import ModelConfig


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


class EncoderLayer(nn.Module):
    """Self-attention over the source, then feed-forward."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c = config
        self.pre_norm = c.norm == "pre"
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_norm = nn.LayerNorm(c.d_model)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.ffn_norm = nn.LayerNorm(c.d_model)
        self.dropout = nn.Dropout(c.dropout)  # on each sublayer's output, before the residual sum

    def forward(
        self, x: Tensor, src_mask: Tensor, need_weights: bool = False, head_gate: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """x: (B, S, d_model); src_mask: (B, 1, 1, S). Returns x and weights (B, H, S, S) or None.

        ``head_gate`` (H,): multipliers on the heads' outputs (model/intervention.py)."""
        if self.pre_norm:  # pre-norm: x + Sublayer(LayerNorm(x))
            h = self.self_attn_norm(x)
            attn_out, weights = self.self_attn(h, h, src_mask, need_weights, head_gate)
            x = x + self.dropout(attn_out)
            x = x + self.dropout(self.ffn(self.ffn_norm(x)))
        else:  # post-norm, the paper's: LayerNorm(x + Sublayer(x))
            attn_out, weights = self.self_attn(x, x, src_mask, need_weights, head_gate)
            x = self.self_attn_norm(x + self.dropout(attn_out))
            x = self.ffn_norm(x + self.dropout(self.ffn(x)))
        return x, weights


@dataclass(eq=False)
class KVCache:
    """What one decoder layer keeps between decoding steps: keys/values of the target prefix and of the source.

    The prefix's keys and values go into a buffer allocated once for the longest output and written in place;
    the source's are projected once per sentence.
    """

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
    """Masked self-attention over the target prefix, cross-attention to the source, feed-forward."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c = config
        self.pre_norm = c.norm == "pre"
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.self_attn_norm = nn.LayerNorm(c.d_model)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.cross_attn_norm = nn.LayerNorm(c.d_model)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.ffn_norm = nn.LayerNorm(c.d_model)
        self.dropout = nn.Dropout(c.dropout)

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
        need_weights: bool = False,
        cache: KVCache | None = None,
        need_cross_weights: bool = False,
        gates: tuple[Tensor | None, Tensor | None] = (None, None),
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """y: (B, T, d_model), the decoder input at the T positions after those in ``cache`` (all of them without one).

        Returns y and, if ``need_weights``, self weights (B, H, T, past + T) and cross weights (B, H, T, S);
        ``need_cross_weights`` asks for the cross weights alone (guided alignment), self-attention staying fused.
        ``memory`` (B, S, d_model) is needed only without a cache; ``tgt_mask`` (1 or B, 1, T, past + T).
        ``gates``: (H,) multipliers on the heads of self- and cross-attention, or None (model/intervention.py).
        """
        need_cross = need_weights or need_cross_weights
        self_gate, cross_gate = gates
        if self.pre_norm:  # pre-norm: x + Sublayer(LayerNorm(x))
            h = self.self_attn_norm(y)
            attn_out, self_w = self.masked_self_attention(h, tgt_mask, need_weights, cache, self_gate)
            y = y + self.dropout(attn_out)
            h = self.cross_attn_norm(y)
            attn_out, cross_w = self.cross_attention(h, memory, src_mask, need_cross, cache, cross_gate)
            y = y + self.dropout(attn_out)
            y = y + self.dropout(self.ffn(self.ffn_norm(y)))
        else:  # post-norm, the paper's: LayerNorm(x + Sublayer(x))
            attn_out, self_w = self.masked_self_attention(y, tgt_mask, need_weights, cache, self_gate)
            y = self.self_attn_norm(y + self.dropout(attn_out))
            attn_out, cross_w = self.cross_attention(y, memory, src_mask, need_cross, cache, cross_gate)
            y = self.cross_attn_norm(y + self.dropout(attn_out))
            y = self.ffn_norm(y + self.dropout(self.ffn(y)))
        return y, self_w, cross_w

    def masked_self_attention(
        self,
        h: Tensor,
        tgt_mask: Tensor | None,
        need_weights: bool,
        cache: KVCache | None,
        head_gate: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention over the prefix: the new positions' keys/values join the cached ones."""
        q, kv = self.self_attn.project_qkv(h)  # (B, H, T, D), (2, B, H, T, D)
        if cache is not None:
            kv = cache.extend(kv)  # (2, B, H, past + T, D)
        return self.self_attn.attend(q, kv, tgt_mask, need_weights, head_gate)

    def cross_attention(
        self,
        h: Tensor,
        memory: Tensor | None,
        src_mask: Tensor,
        need_weights: bool,
        cache: KVCache | None,
        head_gate: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention over the source; its keys/values come from the cache when decoding step by step."""
        memory_kv = cache.memory_kv if cache is not None else self.cross_attn.project_kv(memory)  # (2, B, H, S, D)
        return self.cross_attn.attend(self.cross_attn.project_q(h), memory_kv, src_mask, need_weights, head_gate)
