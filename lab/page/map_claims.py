"""A sentence about an attention map, kept as data: which map it speaks of, what it says, and whether it holds.

A guided example's hint ("in cross-attention, layer 2, mean of heads, the row that writes “dog” puts most weight
on “perro”") is a claim about one model, one kind, one layer, one head or the mean, and one token level
(docs/attention-pitfalls.md §11). Kept as a ``MapClaim``, the page prints the text made from it and a test checks
the very same claim, by the argmax of each named row in exactly that view, against the shipped model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.tokenizer import WORD_START
from lab.attention.map_views import MapView, map_view
from lab.attention.sentence_maps import KIND_TITLES, Kind, SentenceMaps


def surface(label: str) -> str:
    """A row or column label as a claim names it: without the ``▁`` word-start mark, case ignored."""
    return label.replace(WORD_START, "").strip().casefold()


@dataclass(frozen=True)
class MapClaim:
    """In ``kind`` at ``layer`` (0-based) and ``head`` (None: mean of heads), as subwords or whole ``words``, the row
    of each ``(row, column)`` pair puts more weight on that column than on any other (the darkest cell of the row).

    Rows of the decoder's two maps are named by the token they write (docs/attention-pitfalls.md §1).
    """

    kind: Kind
    layer: int
    head: int | None
    words: bool
    looks: tuple[tuple[str, str], ...]  # (row, column): the column the row puts most weight on

    @property
    def view(self) -> str:
        """ "Cross-attention, layer 2, mean of heads, subwords" (1-based, as the page's selectors name them)."""
        head = "mean of heads" if self.head is None else f"head {self.head + 1}"
        return (
            f"{KIND_TITLES[self.kind]}, layer {self.layer + 1}, {head}, {'whole words' if self.words else 'subwords'}"
        )

    @property
    def text(self) -> str:
        """The claim as the page prints it; a row is named by its token (for the decoder's maps, the one it predicts)."""
        rows, cols = (", ".join(f"“{x}”" for x in side) for side in zip(*self.looks, strict=True))
        several = len(self.looks) > 1
        whose = (
            ("the rows of" if several else "the row of")
            if self.kind == "encoder"
            else "the rows predicting"
            if several
            else "the row predicting"
        )
        return f"In {self.view[0].lower()}{self.view[1:]}, {whose} {rows} look{'' if several else 's'} most at {cols}."

    def weights(self, view: MapView) -> np.ndarray:
        """(rows, cols) of the named layer and head (or the mean of the heads)."""
        layer = view.weights[self.layer]  # (H, rows, cols)
        return layer.mean(axis=0) if self.head is None else layer[self.head]

    def failures(self, maps: SentenceMaps) -> list[str]:
        """What does not hold in ``maps`` (empty when the whole claim does), one line per pair."""
        if self.layer >= maps.n_layers(self.kind) or (self.head or 0) >= maps.n_heads:
            return [f"{self.view}: this model has no such layer or head"]
        view = map_view(maps, self.kind, self.words)
        weights = self.weights(view)
        out = []
        for row, column in self.looks:
            found = [i for i, label in enumerate(view.rows) if surface(label) == surface(row)]
            if len(found) != 1:
                out.append(f"{len(found)} rows named “{row}” in {view.rows}")
                continue
            best = view.cols[int(weights[found[0]].argmax())]
            if surface(best) != surface(column):
                out.append(f"the row “{row}” puts most weight on “{best}”, not “{column}”")
        return out

    def holds(self, maps: SentenceMaps) -> bool:
        return not self.failures(maps)
