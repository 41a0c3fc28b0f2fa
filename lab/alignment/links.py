"""Hard alignments from cross-attention: each target word -> the source word it attends to most.

Which rows and which columns: docs/attention-pitfalls.md §1 (the off-by-one) and §3 (sinks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from lab.attention.sentence_maps import SentenceMaps, pick
from lab.attention.words import merge_columns, merge_flags, merge_rows, word_groups, word_labels

Reading = Literal["predicts", "shift"]
READINGS: dict[Reading, str] = {
    "predicts": "Row that predicts the word (the word is the decoder's output there)",
    "shift": "Shift-Att: row where the word is the decoder's input (one step later)",
}


@dataclass(frozen=True)
class Link:
    """Target unit ``target`` attends most to source unit ``source`` with ``weight``."""

    target: int
    source: int
    weight: float


@dataclass(frozen=True)
class Alignment:
    """Target and source units (subwords or words) and one link per target unit (none when nothing is allowed)."""

    target: list[str]
    source: list[str]
    links: list[Link]
    excluded: list[str]  # source units left out before the argmax (EOS, padding)


def target_rows(cross: np.ndarray, reading: Reading) -> np.ndarray:
    """(..., T, S) -> (..., T-1, S), one row per output token y1 … y(T-1). "predicts": row i (computed at input
    y(i-1)) predicts y(i). "shift": y(i) is the *input* of row i+1 (Shift-Att)."""
    return cross[..., :-1, :] if reading == "predicts" else cross[..., 1:, :]


def hard_links(weights: np.ndarray, excluded: list[bool]) -> list[Link]:
    """Argmax of each row of (rows, cols) over the columns not ``excluded`` (no link when every column is)."""
    allowed = ~np.array(excluded, dtype=bool)
    if not allowed.any():
        return []
    masked = np.where(allowed[None, :], weights, -np.inf)
    best = masked.argmax(axis=-1)
    return [Link(i, int(j), float(weights[i, j])) for i, j in enumerate(best)]


def align(
    maps: SentenceMaps, layer: int, head: int | None, reading: Reading = "predicts", words: bool = False
) -> Alignment:
    """Alignment from one decoder layer's cross-attention (one head or the mean), raw map untouched."""
    return align_matrix(maps, pick(maps.cross, layer, head), reading, words)


def align_matrix(
    maps: SentenceMaps, matrix: np.ndarray, reading: Reading = "predicts", words: bool = False
) -> Alignment:
    """Alignment from any (T, S) matrix laid out like one cross-attention map of ``maps`` (rows computed at the
    decoder inputs, columns the source subwords): attention, or attribution (workshop/bench/attribution_aligner.py)."""
    rows = target_rows(matrix, reading)  # (T-1, S)
    target, target_special = maps.tgt_out[:-1], maps.tgt_out_special[:-1]
    source, excluded = list(maps.src), list(maps.src_special)
    if words:
        row_groups = word_groups(target, target_special, punctuation=True)
        col_groups = word_groups(source, maps.src_special, punctuation=True)
        rows = merge_rows(merge_columns(rows, col_groups), row_groups)
        target, source = word_labels(target, row_groups), word_labels(source, col_groups)
        excluded = merge_flags(excluded, col_groups)
    return Alignment(
        list(target), source, hard_links(rows, excluded), [s for s, e in zip(source, excluded, strict=True) if e]
    )
