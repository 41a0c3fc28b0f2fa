"""Subwords -> words: group SentencePiece pieces into words and merge attention maps (docs/attention-pitfalls.md §4)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from data.case_markup import unmark_case
from data.tokenizer import WORD_START


def word_groups(pieces: Sequence[str], special: Sequence[bool]) -> list[list[int]]:
    """Indices of the pieces of each word: ``▁`` begins a word; special tokens (BOS/EOS/PAD) are words of their own."""
    groups: list[list[int]] = []
    opened = False  # whether the last group may be continued by a piece without ▁
    for i, (piece, is_special) in enumerate(zip(pieces, special, strict=True)):
        if is_special:
            groups.append([i])
            opened = False
        elif piece.startswith(WORD_START) or not opened:
            groups.append([i])
            opened = True
        else:
            groups[-1].append(i)
    return groups


def word_labels(pieces: Sequence[str], groups: Sequence[Sequence[int]]) -> list[str]:
    """The text of each word: its pieces joined, the ``▁`` markers dropped, a case mark read ("hola⇧" -> "Hola")."""
    labels = []
    for group in groups:
        text = unmark_case("".join(pieces[i] for i in group).replace(WORD_START, " ").strip())
        labels.append(text or WORD_START)  # a lone "▁" piece: keep a visible label
    return labels


def _membership(groups: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """(n_words, n) matrix with 1 where piece j belongs to word w."""
    m = np.zeros((len(groups), n))
    for w, group in enumerate(groups):
        m[w, list(group)] = 1.0
    return m


def merge_columns(weights: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(..., rows, pieces) -> (..., rows, words): a word receives the SUM of its pieces' weights."""
    m = _membership(groups, weights.shape[-1])  # (words, pieces)
    return weights @ m.T.astype(weights.dtype)


def merge_rows(weights: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(..., pieces, cols) -> (..., words, cols): a word's row is the MEAN of its pieces' rows (still sums to 1)."""
    m = _membership(groups, weights.shape[-2])
    m /= m.sum(axis=1, keepdims=True)  # (words, pieces), rows average
    return m.astype(weights.dtype) @ weights


def merge_mask(
    mask: np.ndarray, row_groups: Sequence[Sequence[int]], col_groups: Sequence[Sequence[int]]
) -> np.ndarray:
    """(rows, cols) bool -> (row words, col words): True only where every underlying cell is True."""
    return np.array([[bool(mask[np.ix_(list(r), list(c))].all()) for c in col_groups] for r in row_groups], dtype=bool)


def merge_flags(flags: Sequence[bool], groups: Sequence[Sequence[int]]) -> list[bool]:
    """Per-piece flags -> per-word flags (a word is flagged when all its pieces are)."""
    return [all(flags[i] for i in group) for group in groups]
