"""Multi-head scaled dot-product attention, used three ways: encoder self, decoder masked self, cross.

Shapes: B batch, H heads, T_q query length, T_k key length, D = d_head.
Masks are boolean and broadcast to (B, H, T_q, T_k): True means "may attend".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """softmax(Q Kᵀ / √d_head) V over ``n_heads`` heads; weights are returned, never stored."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, H*D) -> (B, H, T, D)."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, D)

    def project_kv(self, kv_input: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of ``kv_input`` (B, T_k, d_model), each (B, H, T_k, D); cacheable."""
        return self.split_heads(self.k_proj(kv_input)), self.split_heads(self.v_proj(kv_input))

    def attend(
        self, query: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` (B, T_q, d_model) to projected ``k``/``v`` (B, H, T_k, D).

        Returns the output (B, T_q, d_model) and, if ``need_weights``, the weights (B, H, T_q, T_k).
        """
        q = self.split_heads(self.q_proj(query))  # (B, H, T_q, D)
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T_q, T_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = scores.softmax(dim=-1)
            context = F.dropout(weights, p) @ v  # (B, H, T_q, D)
        else:
            weights = None
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        b, _, t_q, _ = context.shape
        context = context.transpose(1, 2).reshape(b, t_q, self.n_heads * self.d_head)  # (B, T_q, H*D)
        return self.out_proj(context), weights

    def forward(
        self, query: Tensor, kv_input: Tensor, mask: Tensor | None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Attention of ``query`` over ``kv_input`` (itself for self-attention)."""
        k, v = self.project_kv(kv_input)
        return self.attend(query, k, v, mask, need_weights)


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, T) ids -> (B, 1, 1, T) mask, True at real tokens (keys that may be attended)."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(length: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, T, T) lower-triangular mask: position i may attend to positions ≤ i."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()[None, None]
