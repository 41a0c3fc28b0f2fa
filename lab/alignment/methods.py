"""The attention aligners the alignment bench compares: readings of the model's cross-attention (eflomal, the
statistical aligner beside them, lives in data/alignments.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from data.alignments import grow_diag_final_and
from lab.alignment.links import READINGS, Reading, target_rows
from lab.alignment.scoring import (
    GoldPair,
    Link,
    Score,
    column_argmax,
    piece_words,
    row_argmax,
    score,
    subword_argmax,
    threshold,
    word_matrix,
)
from model.attention_maps import inspect
from translate.translator import Translator

Extraction = Literal["argmax", "threshold", "intersection", "grow-diag-final-and", "Shift-Att"]
EXTRACTIONS: dict[Extraction, str] = {
    "argmax": "each English word to the Spanish word it attends to most (the app's hard alignment)",
    "threshold": "every Spanish word with at least a share tau of the English word's attention",
    "intersection": "argmax both ways, kept where they agree (SimAlign's ArgMax, Jalili Sabet et al. 2020)",
    "grow-diag-final-and": "argmax both ways, symmetrised like a statistical aligner's (Koehn et al. 2005)",
    "Shift-Att": "Chen et al. 2020: argmax per subword at the step where it is the decoder input, mean of heads",
}


@dataclass(frozen=True)
class ForcedPair:
    """Cross-attention of one teacher-forced pass over a gold pair, read at the gold words."""

    words: dict[Reading, np.ndarray]  # (L, H + 1, n_target, n_source): each head, then their mean at index H
    shift_subwords: np.ndarray  # (L, T-1, S-1): mean of heads, "shift" rows, source EOS dropped (for Shift-Att)
    target_words: list[int]  # gold word of each output subword y1 … y(T-1)
    source_words: list[int]  # gold word of each source subword x1 … x(S-1)

    @property
    def shape(self) -> tuple[int, int]:
        """(gold target words, gold source words)."""
        n_target, n_source = self.words["predicts"].shape[-2:]
        return n_target, n_source


def forced_pair(
    cross: np.ndarray, target_words: list[int], source_words: list[int], shape: tuple[int, int]
) -> ForcedPair:
    """(L, H, T, S) cross-attention as ``inspect`` returns it -> every reading at the (target, source) gold words."""
    cross = np.concatenate([cross, cross.mean(axis=1, keepdims=True)], axis=1)  # (L, H + 1, T, S)
    words = {r: word_matrix(target_rows(cross, r)[..., :-1], target_words, source_words, *shape) for r in READINGS}
    return ForcedPair(words, target_rows(cross[:, -1], "shift")[..., :-1], target_words, source_words)


@dataclass(frozen=True)
class GoldIds:
    """A gold pair as the model reads and writes it: subword ids (EOS added) and each subword's gold word."""

    src_ids: list[int]  # x1 … x(S-1) </s>
    tgt_ids: list[int]  # y1 … y(T-1) </s>
    source_words: list[int]  # gold word of each source subword x1 … x(S-1)
    target_words: list[int]  # gold word of each output subword y1 … y(T-1)


def gold_ids(translator: Translator, pair: GoldPair) -> GoldIds:
    """The Spanish side's and the English side's subwords; ValueError when either is too long for the model."""
    tok = translator.tokenizer
    src_ids, source_words = piece_words(tok.src, pair.source, tok.src_tokens)
    tgt_ids, target_words = piece_words(tok.tgt, pair.target)
    src_ids, tgt_ids = [*src_ids, tok.src.eos_id()], [*tgt_ids, tok.tgt.eos_id()]
    if max(len(src_ids), len(tgt_ids)) > translator.max_src_len:
        raise ValueError(f"{' '.join(pair.source)[:60]}…: longer than the model's {translator.max_src_len} subwords")
    return GoldIds(src_ids, tgt_ids, source_words, target_words)


def force_decode(translator: Translator, pair: GoldPair) -> ForcedPair:
    """Feed the Spanish side, force the English side, and map both subword axes back to the gold words."""
    ids = gold_ids(translator, pair)
    cross = inspect(translator.model, ids.src_ids, ids.tgt_ids).cross.numpy()  # (L, H, T, S)
    return forced_pair(cross, ids.target_words, ids.source_words, (len(pair.target), len(pair.source)))


def extract(weights: np.ndarray, extraction: Extraction, tau: float | None = None) -> set[Link]:
    """Links from a (gold target words, gold source words) matrix by one extraction (not Shift-Att: subwords)."""
    if extraction == "argmax":
        return row_argmax(weights)
    if extraction == "threshold":
        return threshold(weights, tau or 0.0)
    forward, backward = row_argmax(weights), column_argmax(weights)
    return forward & backward if extraction == "intersection" else grow_diag_final_and(forward, backward)


@dataclass(frozen=True)
class Method:
    """One reading of alignments off the cross-attention: layer, head (None = mean of heads), rows, extraction."""

    extraction: Extraction
    layer: int  # 0-based, like lab.alignment.links.align
    head: int | None
    reading: Reading
    tau: float | None = None  # the threshold extraction's share

    @property
    def name(self) -> str:
        """1-based like the app: "layer 2, head 3, shift: argmax"."""
        if self.extraction == "Shift-Att":
            return f"Shift-Att (Chen et al. 2020), layer {self.layer + 1}"
        head = "mean of heads" if self.head is None else f"head {self.head + 1}"
        how = f"threshold {self.tau:g}" if self.extraction == "threshold" else self.extraction
        return f"layer {self.layer + 1}, {head}, {self.reading}: {how}"

    def word_weights(self, pair: ForcedPair) -> np.ndarray:
        """(gold target words, gold source words): the attention this method reads its links from."""
        return pair.words[self.reading][self.layer, -1 if self.head is None else self.head]

    def links(self, pair: ForcedPair) -> set[Link]:
        if self.extraction == "Shift-Att":
            return subword_argmax(pair.shift_subwords[self.layer], pair.target_words, pair.source_words)
        return extract(self.word_weights(pair), self.extraction, self.tau)

    def fields(self) -> dict[str, Any]:
        """Machine-readable choice (0-based layer and head, head None = mean of heads)."""
        return {
            "extraction": self.extraction,
            "layer_index": self.layer,
            "head_index": self.head,
            "reading": self.reading,
            "threshold": self.tau,
        }

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Method:
        """The method ``fields()`` describes (a stored bench record); KeyError or ValueError when it is not one."""
        extraction, reading, head = fields["extraction"], fields["reading"], fields["head_index"]
        if extraction not in EXTRACTIONS or reading not in READINGS:
            raise ValueError(f"unknown extraction {extraction!r} or reading {reading!r}")
        tau = fields.get("threshold")
        layer = int(fields["layer_index"])
        return cls(extraction, layer, None if head is None else int(head), reading, None if tau is None else float(tau))

    def score_on(self, pair: ForcedPair, gold: GoldPair) -> Score:
        """Precision, recall and AER of this method on one gold pair, counted as the bench counts a whole set."""
        return score([self.links(pair)], [gold.links])
