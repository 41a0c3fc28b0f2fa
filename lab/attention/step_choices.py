"""The choice at each decoding step: the token taken, its probability, and the most probable alternatives.

One teacher-forced pass over the shown hypothesis gives, at every position, the next-token distribution the search
saw when it extended that prefix; the product of the chosen tokens' probabilities is the hypothesis's probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from data.tokenizer import Tokenizer
from model.intervention import Intervention
from model.transformer import Transformer

TOP = 5


@dataclass(frozen=True)
class Choice:
    """Step ``step`` (0-based): the decoder saw ``<s> y1 … y(step)`` and produced ``token``."""

    step: int
    token: str
    log_prob: float  # log p(token | source, prefix)
    rank: int  # 1 = the most probable token at this step
    top: list[tuple[str, float]]  # the TOP most probable tokens and their probabilities, most probable first
    top_ids: tuple[int, ...] = ()  # the ids of those tokens, in the same order

    @property
    def prob(self) -> float:
        return math.exp(self.log_prob)


@torch.inference_mode()
def next_token_log_probs(
    model: Transformer, src_ids: list[int], tgt_in_ids: list[int], intervention: Intervention | None = None
) -> torch.Tensor:
    """(T, V) log p(next token) at each decoder input position: one forced pass, in float32, on the CPU."""
    if model.training:
        raise ValueError("the model is in training mode (dropout): call .eval() first")
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([tgt_in_ids], device=device)  # (1, T)
    memory, src_mask, _ = model.encode(src, intervention=intervention)
    hidden = model.decode(tgt_in, memory, src_mask, intervention=intervention).hidden  # (1, T, d_model)
    return model.output(hidden[0]).float().log_softmax(-1).cpu()  # (T, V)


def choices(model: Transformer, tokenizer: Tokenizer, src_ids: list[int], out_ids: list[int]) -> list[Choice]:
    """One Choice per output token of ``out_ids`` (EOS last), for the source ``src_ids``."""
    tgt_in = [model.config.bos_id, *out_ids[:-1]]
    log_probs = next_token_log_probs(model, src_ids, tgt_in)  # (T, V)
    chosen = torch.tensor(out_ids)
    chosen_lp = log_probs.gather(1, chosen[:, None])[:, 0]  # (T,)
    ranks = (log_probs > chosen_lp[:, None]).sum(1) + 1  # (T,)
    best_lp, best_ids = log_probs.topk(min(TOP, log_probs.size(1)), dim=1)  # (T, TOP)
    out = []
    for step, token in enumerate(out_ids):
        alternatives = [
            (tokenizer.tgt.id_to_piece(int(i)), float(lp.exp()))
            for i, lp in zip(best_ids[step], best_lp[step], strict=True)
        ]
        out.append(
            Choice(
                step,
                tokenizer.tgt.id_to_piece(token),
                float(chosen_lp[step]),
                int(ranks[step]),
                alternatives,
                tuple(int(i) for i in best_ids[step]),
            )
        )
    return out


def prefix_with(out_ids: list[int], step: int, token: int) -> list[int]:
    """The output up to step ``step`` (0-based) with ``token`` taken there: what to force to try another candidate."""
    return [*out_ids[:step], token]
