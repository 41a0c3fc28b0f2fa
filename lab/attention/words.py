"""Subwords -> words: group SentencePiece pieces into words and merge attention maps (docs/attention-pitfalls.md §4)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np

from data.case_markup import unmark_case
from data.tokenizer import WORD_START

CLITIC_MARKS = ("'", "’")  # an apostrophe piece keeps the piece after it: "'s", as a tokenised gold has it


def is_punctuation(piece: str) -> bool:
    """A piece of punctuation only ("." "?" "»,"), its ``▁`` aside: Unicode's P* categories."""
    text = piece.replace(WORD_START, "")
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def word_groups(pieces: Sequence[str], special: Sequence[bool], punctuation: bool = False) -> list[list[int]]:
    """Indices of the pieces of each word: ``▁`` begins a word; special tokens (BOS/EOS/PAD) are words of their own.
    With ``punctuation``, a punctuation piece glued to a word is a word of its own too ("católica" and ".", as a
    tokenised gold alignment has them): a link then never counts the final period's weight as its word's."""
    groups: list[list[int]] = []
    opened = False  # whether the last group may be continued by a piece without ▁
    for i, (piece, is_special) in enumerate(zip(pieces, special, strict=True)):
        last = pieces[groups[-1][-1]] if groups else ""
        apart = punctuation and (is_punctuation(piece) or (is_punctuation(last) and last not in CLITIC_MARKS))
        if is_special:
            groups.append([i])
            opened = False
        elif piece.startswith(WORD_START) or not opened or (apart and last != WORD_START):
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
