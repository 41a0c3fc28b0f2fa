"""What every what-if tool works on (``Subject``), and the model as greedy and beam search see it with a "what if?"
applied: heads switched off, an English prefix forced.

``Steered`` offers what ``model/decode.py`` asks of a model, so the project's own greedy and beam search run unchanged
over it. A forced step gives the prefix token log-probability 0 and every other token −∞; the log-probability of an
output is therefore always re-read from one teacher-forced pass (``output_log_probs``), never from the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from lab.attention.sentence_maps import SentenceMaps
from lab.attention.step_choices import next_token_log_probs
from model.config import ModelConfig
from model.decode import beam_search, greedy, max_output_lengths
from model.intervention import Intervention
from model.layers import KVCache
from model.transformer import Encoded, Step, Transformer
from translate.translator import DecodeOptions, Translator

MAX_SOURCE = 80  # subwords of a sentence the what-if tools work on (each tool runs the model several times)
GREEDY = DecodeOptions()  # the search when none is asked for: greedy, the Translator's length limits


@dataclass(frozen=True)
class Subject:
    """The model, one sentence, the hypothesis shown and the page's settings."""

    translator: Translator
    directory: str  # the model directory: the cache key of everything computed
    src_ids: tuple[int, ...]  # x1 … xS </s>
    tokens: tuple[int, ...]  # the hypothesis shown, EOS last
    maps: SentenceMaps  # its maps (one teacher-forced pass)
    options: DecodeOptions  # the page's search: greedy or beam with its length penalty
    layer: int  # the decoder layer the page shows

    @property
    def search_name(self) -> str:
        return "greedy search" if self.options.beam_size <= 1 else f"beam search (beam {self.options.beam_size})"


@dataclass(frozen=True)
class Steered:
    """``model`` with ``intervention`` on every pass and the first outputs forced to ``prefix``."""

    model: Transformer
    intervention: Intervention | None = None
    prefix: tuple[int, ...] = ()

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    def encode(self, src: Tensor, need_weights: bool = False) -> Encoded:
        return self.model.encode(src, need_weights, self.intervention)

    def start_caches(self, memory: Tensor, capacity: int | None = None) -> tuple[KVCache, ...]:
        return self.model.start_caches(memory, capacity)

    def decode_step(
        self, last_tokens: Tensor, caches: tuple[KVCache, ...], src_mask: Tensor, need_weights: bool = False
    ) -> Step:
        """One step; at output position t < len(prefix) only ``prefix[t]`` may follow."""
        position = caches[0].length  # the decoder input's position = the index of the output it predicts
        step = self.model.decode_step(last_tokens, caches, src_mask, need_weights, self.intervention)
        if position >= len(self.prefix):
            return step
        forced = torch.full_like(step.logits, float("-inf"))
        forced[:, self.prefix[position]] = 0.0
        return step._replace(logits=forced)


def output_limit(model: Transformer, src_ids: list[int], options: DecodeOptions = GREEDY) -> int:
    """The most output tokens (EOS included) the search allows for this source."""
    lengths = torch.tensor([len(src_ids)])
    return int(max_output_lengths(lengths, options.max_len_a, options.max_len_b, model.config.max_positions)[0])


def search(steered: Steered, src_ids: list[int], options: DecodeOptions = GREEDY) -> tuple[list[int], bool]:
    """The best output (EOS last) of greedy (beam size 1) or beam search over ``steered``, and whether the length
    limit cut it."""
    src = torch.tensor([src_ids], device=next(steered.model.parameters()).device)  # (1, S)
    a, b = options.max_len_a, options.max_len_b
    if options.beam_size <= 1:
        best = greedy(steered, src, a, b)[0]  # type: ignore[arg-type]
    else:
        hyps = beam_search(steered, src, options.beam_size, options.length_penalty, 1, a, b)  # type: ignore[arg-type]
        best = hyps[0][0]
    return best.tokens, best.truncated


def output_log_probs(
    model: Transformer, src_ids: list[int], out_ids: list[int], intervention: Intervention | None = None
) -> Tensor:
    """(T,) log p(y_t | source, y_<t) of every output token (EOS included): one teacher-forced pass, float32, CPU."""
    log_probs = next_token_log_probs(model, src_ids, [model.config.bos_id, *out_ids[:-1]], intervention)  # (T, V)
    return log_probs.gather(1, torch.tensor(out_ids)[:, None])[:, 0]  # (T,)
