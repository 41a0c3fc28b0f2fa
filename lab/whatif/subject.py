"""What every what-if tool works on: the model, one sentence, the hypothesis shown and the page's settings."""

from __future__ import annotations

from dataclasses import dataclass

from lab.attention.sentence_maps import SentenceMaps
from translate.translator import DecodeOptions, Translator


@dataclass(frozen=True)
class Subject:
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
