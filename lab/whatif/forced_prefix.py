"""Force a beginning: the words before a clicked word kept, an alternative taken there, the model continues it
(greedy or beam: views/word_alternatives.py).

Forcing the model's own greedy prefix gives back the greedy output exactly (tests/test_whatif.py): the forced steps
are the steps the search would have taken anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.whatif.steering import GREEDY, Steered, output_limit, output_log_probs, search
from model.transformer import Transformer
from translate.translator import DecodeOptions


@dataclass(frozen=True)
class Forced:
    """The output continued from a forced prefix, scored by the model beside the original output."""

    prefix: list[int]  # the forced subwords (no EOS), cut to the output limit (a word's prefix always fits)
    tokens: list[int]  # the whole new output: prefix, then the model's continuation, EOS last
    log_prob: float  # log p(new output | source), teacher-forced
    original_log_prob: float  # log p(original output | source), teacher-forced
    truncated: bool  # the length limit cut the continuation
    token_log_probs: tuple[float, ...] = ()  # log p of each token of ``tokens``: the words' shading


def force(
    model: Transformer,
    src_ids: list[int],
    prefix: list[int],
    original: list[int],
    options: DecodeOptions = GREEDY,
) -> Forced:
    """Continue ``prefix`` with the page's search; score it and the ``original`` output (EOS last)."""
    room = output_limit(model, src_ids, options) - 1  # one position is kept for EOS
    kept = list(prefix[:room])
    tokens, truncated = search(Steered(model, None, tuple(kept)), src_ids, options)
    scores = output_log_probs(model, src_ids, tokens)  # (T,)
    original_log_prob = float(output_log_probs(model, src_ids, original).sum())
    return Forced(kept, tokens, float(scores.sum()), original_log_prob, truncated, tuple(scores.tolist()))
