"""Every attention map of one (source, output) pair, from a single teacher-forced pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from model.transformer import Transformer

Kind = Literal["encoder", "decoder", "cross"]
KINDS: tuple[Kind, ...] = ("encoder", "decoder", "cross")  # the record's three fields, in the paper's order


@dataclass(frozen=True)
class AttentionMaps:
    """All three kinds of attention for one sentence, every layer and head, as float tensors on the CPU. Row i of
    ``decoder`` and ``cross`` is computed at decoder input position i (token ``tgt_in_ids[i]``) and predicts output
    token ``tgt_out_ids[i]``: label rows with ``tgt_out_ids`` (docs/attention-pitfalls.md §1)."""

    encoder: Tensor  # (L_enc, H, S, S): rows and columns = src_ids
    decoder: Tensor  # (L_dec, H, T, T): rows predict tgt_out_ids, columns = tgt_in_ids
    cross: Tensor  # (L_dec, H, T, S): rows predict tgt_out_ids, columns = src_ids
    src_ids: list[int]  # x1 … xS </s>
    tgt_in_ids: list[int]  # <s> y1 … y(T-1)
    tgt_out_ids: list[int]  # y1 … y(T-1) </s>


@torch.inference_mode()
def inspect(model: Transformer, src_ids: list[int], out_ids: list[int]) -> AttentionMaps:
    """One forced pass over ``out_ids`` (the chosen hypothesis, EOS included) in eval mode (no dropout)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    tgt_in_ids = [model.config.bos_id] + out_ids[:-1]
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([tgt_in_ids], device=device)  # (1, T)
    memory, src_mask, encoder = model.encode(src, need_weights=True)
    _, decoder, cross = model.decode(tgt_in, memory, src_mask, need_weights=True)
    model.train(was_training)

    def stack(per_layer: tuple[Tensor, ...]) -> Tensor:
        return torch.stack([w[0] for w in per_layer]).float().cpu()  # (L, H, rows, cols)

    return AttentionMaps(stack(encoder), stack(decoder), stack(cross), list(src_ids), tgt_in_ids, list(out_ids))
