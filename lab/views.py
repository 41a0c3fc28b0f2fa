"""What the learner is looking at: one kind of attention, at subword or word level, with its labels and mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.maps import Kind, SentenceMaps
from lab.words import merge_columns, merge_flags, merge_mask, merge_rows, word_groups, word_labels


@dataclass(frozen=True)
class MapView:
    """All layers and heads of one kind, ready to draw: rows are queries, columns are keys."""

    kind: Kind
    weights: np.ndarray  # (L, H, rows, cols)
    rows: list[str]  # for decoder and cross: the token each row predicts
    cols: list[str]
    future: np.ndarray  # (rows, cols) True where masked (exactly 0 weight, drawn blank)
    col_excluded: list[bool]  # columns an alignment must skip (source EOS, padding)


@dataclass(frozen=True)
class Words:
    """Word groups of the three token sequences of a sentence."""

    src: list[list[int]]
    tgt_in: list[list[int]]
    tgt_out: list[list[int]]


def words_of(maps: SentenceMaps) -> Words:
    return Words(
        word_groups(maps.src, maps.src_special),
        word_groups(maps.tgt_in, maps.tgt_in_special),
        word_groups(maps.tgt_out, maps.tgt_out_special),
    )


def map_view(maps: SentenceMaps, kind: Kind, words: bool = False) -> MapView:
    """Subword maps as they left the model, or word maps (sum over source subwords, mean over target subwords)."""
    rows, cols = maps.labels(kind)
    col_excluded = [False] * len(cols) if kind == "decoder" else list(maps.src_special)
    if not words:
        return MapView(kind, maps.weights(kind), list(rows), list(cols), maps.future(kind), col_excluded)
    groups = words_of(maps)
    row_groups = groups.src if kind == "encoder" else groups.tgt_out
    col_groups = groups.tgt_in if kind == "decoder" else groups.src
    weights = merge_rows(merge_columns(maps.weights(kind), col_groups), row_groups)
    return MapView(
        kind,
        weights,
        word_labels(rows, row_groups),
        word_labels(cols, col_groups),
        merge_mask(maps.future(kind), row_groups, col_groups),
        merge_flags(col_excluded, col_groups) if kind != "decoder" else [False] * len(col_groups),
    )
