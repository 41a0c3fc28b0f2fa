"""Multi-head scaled dot-product attention, used three ways: encoder self, decoder masked self, cross.

Shapes (legend in model/__init__.py): B batch, H heads, T_q query length, T_k key length, D = d_head.
Masks are boolean and broadcast to (B, H, T_q, T_k): True means "may attend".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """softmax(Q Kᵀ / √d_head) V over ``n_heads`` heads; weights are returned, never stored.

    W_Q, W_K and W_V are stacked in one ``in_proj`` (3·d_model × d_model), as in PyTorch's own attention module:
    self-attention projects Q, K and V in one matmul; cross-attention projects Q from the decoder and K, V
    from the encoder memory (once per sentence when decoding).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # rows: W_Q, then W_K, then W_V
        self.out_proj = nn.Linear(d_model, d_model)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Self-attention: queries (B, H, T, D) and keys/values stacked (2, B, H, T, D) of ``x`` (B, T, d_model)."""
        b, t, _ = x.shape
        qkv = self.in_proj(x).view(b, t, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        return qkv[0], qkv[1:]

    def project_q(self, x: Tensor) -> Tensor:
        """Cross-attention queries of ``x`` (B, T, d_model): (B, H, T, D)."""
        b, t, _ = x.shape
        q = F.linear(x, self.in_proj.weight[: self.d_model], self.in_proj.bias[: self.d_model])
        return q.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, D)

    def project_kv(self, memory: Tensor) -> Tensor:
        """Cross-attention keys and values of ``memory`` (B, S, d_model), stacked: (2, B, H, S, D)."""
        b, s, _ = memory.shape
        kv = F.linear(memory, self.in_proj.weight[self.d_model :], self.in_proj.bias[self.d_model :])
        return kv.view(b, s, 2, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)  # (2, B, H, S, D)

    def attend(
        self, q: Tensor, kv: Tensor, mask: Tensor | None, need_weights: bool = False, head_gate: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``q`` (B, H, T_q, D) over ``kv`` (2, B, H, T_k, D).

        Returns the output (B, T_q, d_model) and, if ``need_weights``, the weights (B, H, T_q, T_k). ``head_gate``
        (H,) multiplies each head's context before W_O (0 switches a head off; model/intervention.py).
        """
        k, v = kv.unbind(0)  # each (B, H, T_k, D)
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T_q, T_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = scores.softmax(dim=-1)
            context = F.dropout(weights, p) @ v  # (B, H, T_q, D)
        else:
            weights = None
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, H, T_q, D)
        if head_gate is not None:
            context = context * head_gate.to(context.dtype)[None, :, None, None]  # (B, H, T_q, D)
        b, _, t_q, _ = context.shape
        context = context.transpose(1, 2).reshape(b, t_q, self.d_model)  # (B, T_q, H*D)
        return self.out_proj(context), weights

    def forward(
        self,
        query: Tensor,
        kv_input: Tensor,
        mask: Tensor | None,
        need_weights: bool = False,
        head_gate: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention of ``query`` (B, T_q, d_model) over ``kv_input`` (B, T_k, d_model); pass the same tensor twice
        for self-attention."""
        if kv_input is query:
            q, kv = self.project_qkv(query)
        else:
            q, kv = self.project_q(query), self.project_kv(kv_input)
        return self.attend(q, kv, mask, need_weights, head_gate)


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, T) ids -> (B, 1, 1, T) mask, True at real tokens (keys that may be attended)."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(length: int, device: torch.device | None = None, past: int = 0) -> Tensor:
    """(1, 1, T, past + T) mask: query i (at position past + i) may attend to positions ≤ past + i."""
    return torch.ones(length, past + length, dtype=torch.bool, device=device).tril(past)[None, None]
