"""Follow one token through the three views: where it is a query (a row) and where it is a key (a column).

A source token x_i is row i and column i of encoder self-attention and column i of cross-attention. An output
token y_j (row j of the decoder views, ``tgt_out[j]``) is the row that predicts it in masked self-attention and in
cross-attention, and — once generated — the decoder input at position j + 1, column j + 1 of masked
self-attention (docs/attention-pitfalls.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lab.attention.map_views import words_of
from lab.attention.sentence_maps import Kind, SentenceMaps

Side = Literal["src", "tgt"]


@dataclass(frozen=True)
class Followed:
    """One subword token: ``src`` index into ``maps.src``, or ``tgt`` index into ``maps.tgt_out``."""

    side: Side
    index: int


@dataclass(frozen=True)
class Focus:
    """Rows and columns of one view to highlight (indices of that view: subwords, or words at word level)."""

    rows: frozenset[int]
    cols: frozenset[int]


def options(maps: SentenceMaps) -> list[Followed]:
    """Every token one can follow: the source pieces, then the output pieces (EOS of both included)."""
    return [Followed("src", i) for i in range(len(maps.src))] + [Followed("tgt", j) for j in range(len(maps.tgt_out))]


def describe(maps: SentenceMaps, token: Followed, src_name: str, tgt_name: str) -> str:
    """A picker label: "Spanish 2: ▁gato" (1-based positions)."""
    if token.side == "src":
        return f"{src_name} {token.index + 1}: {maps.src[token.index]}"
    return f"{tgt_name} {token.index + 1}: {maps.tgt_out[token.index]}"


def _subword_focus(maps: SentenceMaps, kind: Kind, token: Followed) -> tuple[set[int], set[int]]:
    i = token.index
    if token.side == "src":
        return ({i}, {i}) if kind == "encoder" else (set(), {i} if kind == "cross" else set())
    if kind == "encoder":
        return set(), set()
    cols = {i + 1} if kind == "decoder" and i + 1 < len(maps.tgt_in) else set()
    return {i}, cols


def _word_of(groups: list[list[int]], pieces: set[int]) -> set[int]:
    return {w for w, group in enumerate(groups) if pieces & set(group)}


def focus(maps: SentenceMaps, kind: Kind, token: Followed | None, words: bool = False) -> Focus:
    """Where ``token`` appears in the view of ``kind``; empty when it does not (or when nothing is followed)."""
    if token is None:
        return Focus(frozenset(), frozenset())
    rows, cols = _subword_focus(maps, kind, token)
    if words:
        groups = words_of(maps)
        row_groups = groups.src if kind == "encoder" else groups.tgt_out
        col_groups = groups.tgt_in if kind == "decoder" else groups.src
        rows, cols = _word_of(row_groups, rows), _word_of(col_groups, cols)
    return Focus(frozenset(rows), frozenset(cols))


def token_at(maps: SentenceMaps, kind: Kind, row: int, words: bool = False) -> Followed:
    """The token whose row ``row`` was clicked in the view of ``kind`` (the first piece of a word at word level)."""
    if words:
        groups = words_of(maps)
        row = (groups.src if kind == "encoder" else groups.tgt_out)[row][0]
    return Followed("src" if kind == "encoder" else "tgt", row)
