"""The translation loss: label-smoothed cross-entropy at the real (non-pad) target positions, teacher-forced."""

from __future__ import annotations

from typing import NamedTuple

import torch.nn.functional as F
from torch import Tensor

from model.transformer import Transformer


class TokenLoss(NamedTuple):
    loss: Tensor  # (N,) label-smoothed cross-entropy at the N real positions of tgt_out
    nll: Tensor  # (N,) their plain negative log-likelihood, detached (the dev loss, perplexity)
    real: Tensor  # (B, T) True at real positions: real.nonzero()[:, 0] is each token's sentence
    cross: tuple[Tensor | None, ...] | None  # the decoder's cross weights of ``cross_weights_layer`` only


def token_loss(
    model: Transformer,
    src: Tensor,
    tgt_in: Tensor,
    tgt_out: Tensor,
    label_smoothing: float = 0.0,
    cross_weights_layer: int | None = None,
) -> TokenLoss:
    """Every loss of the lab (training, dev loss, a taught correction, the toy task): src (B, S), tgt_in and
    tgt_out (B, T); only the real positions are projected onto the vocabulary."""
    memory, src_mask, _ = model.encode(src)
    hidden, _, cross = model.decode(tgt_in, memory, src_mask, cross_weights_layer=cross_weights_layer)
    real = tgt_out != model.config.pad_id
    logits, target = model.output(hidden[real]).float(), tgt_out[real]  # (N, V), (N,)
    loss = F.cross_entropy(logits, target, label_smoothing=label_smoothing, reduction="none")
    nll = F.cross_entropy(logits.detach(), target, reduction="none") if label_smoothing else loss.detach()
    return TokenLoss(loss, nll, real, cross)
