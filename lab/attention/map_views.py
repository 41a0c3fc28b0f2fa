"""What the learner is looking at: one kind of attention, at subword or word level, with its labels and mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.attention.sentence_maps import Kind, SentenceMaps
from lab.attention.words import merge_columns, merge_mask, merge_rows, word_groups, word_labels

MAX_MAP_CELLS = 40_000  # cells of one drawn map (about 0.6 MB on the page); a bigger map is not drawn
MAX_GRID_CELLS = 100_000  # the layers × heads grid (about 1.4 MB): all layers, else the chosen layer, else nothing


@dataclass(frozen=True)
class MapView:
    """All layers and heads of one kind, ready to draw: rows are queries, columns are keys."""

    kind: Kind
    weights: np.ndarray  # (L, H, rows, cols)
    rows: list[str]  # for decoder and cross: the token each row predicts
    cols: list[str]
    future: np.ndarray  # (rows, cols) True where masked (exactly 0 weight, drawn blank)
    inputs: list[str] | None  # decoder and cross: the decoder input each row is computed at; None for the encoder
    after: list[str] | None = None  # decoder and cross: the token each row comes after (its first piece's input)

    @property
    def row_labels(self) -> list[str]:
        """Axis labels of the rows: the query token; a decoder row names the token it comes after and the one it
        predicts, "<s> → ▁She", so that neither reading is off by one (docs/attention-pitfalls.md §1)."""
        if self.after is None:
            return list(self.rows)
        return [f"{before} → {row}" for before, row in zip(self.after, self.rows, strict=True)]

    @property
    def cells(self) -> int:
        """Cells of one (layer, head) map."""
        return int(self.weights.shape[-2] * self.weights.shape[-1])


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


def row_inputs(tgt_in: list[str], row_groups: list[list[int]]) -> list[str]:
    """The decoder inputs behind each word row: a word's row averages the rows computed at these inputs."""
    return [" ".join(tgt_in[i] for i in group) for group in row_groups]


def map_view(maps: SentenceMaps, kind: Kind, words: bool = False) -> MapView:
    """Subword maps as they left the model, or word maps (sum over source subwords, mean over target subwords)."""
    rows, cols = maps.labels(kind)
    inputs = None if kind == "encoder" else list(maps.tgt_in)
    if not words:
        weights, future = maps.weights(kind), maps.future(kind)
        return MapView(kind, weights, list(rows), list(cols), future, inputs, inputs)
    groups = words_of(maps)
    row_groups = groups.src if kind == "encoder" else groups.tgt_out
    col_groups = groups.tgt_in if kind == "decoder" else groups.src
    weights = merge_rows(merge_columns(maps.weights(kind), col_groups), row_groups)
    word_rows = word_labels(rows, row_groups)
    return MapView(
        kind,
        weights,
        word_rows,
        word_labels(cols, col_groups),
        merge_mask(maps.future(kind), row_groups, col_groups),
        None if inputs is None else row_inputs(inputs, row_groups),
        # a word's first piece is computed at the last piece of the word before it (or at <s>)
        None if inputs is None else [inputs[0], *word_rows[:-1]],
    )


def too_big(view: MapView) -> str:
    """Why one map of ``view`` is not drawn ("" when it is): the page's ceiling on cells per chart."""
    if view.cells <= MAX_MAP_CELLS:
        return ""
    return (
        f"This map has {view.cells:,} cells, more than the page draws ({MAX_MAP_CELLS:,}): switch on "
        "“Whole words”, or look at a shorter sentence."
    )


@dataclass(frozen=True)
class GridPlan:
    """Which layers the all-heads grid draws (none when even one is too big) and what the page says about it."""

    layers: list[int]
    note: str  # what was left out and why; "" when every layer is drawn


def grid_plan(view: MapView, layer: int) -> GridPlan:
    """All layers when they fit under MAX_GRID_CELLS, else only ``layer``, else nothing."""
    n_layers, n_heads = view.weights.shape[:2]
    per_layer = n_heads * view.cells
    if n_layers * per_layer <= MAX_GRID_CELLS:
        return GridPlan(list(range(n_layers)), "")
    if per_layer <= MAX_GRID_CELLS:
        return GridPlan(
            [layer],
            f"All {n_layers} layers would be {n_layers * per_layer:,} cells, more than the page draws "
            f"({MAX_GRID_CELLS:,}): only layer {layer + 1} is shown (choose it with the layer chooser above).",
        )
    return GridPlan(
        [],
        f"The heads of one layer would be {per_layer:,} cells, more than the page draws ({MAX_GRID_CELLS:,}): "
        "switch on “Whole words”, or look at a shorter sentence.",
    )
