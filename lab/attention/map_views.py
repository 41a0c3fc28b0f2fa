"""One attention map as the page draws it: which weights (one kind, subwords or whole words, one layer, one head or
their mean), the token followed through the three maps, and the chart. The Streamlit wiring (pickers, clicks, the
cache) is ``views/maps.py``; the pure heatmap, its colour scale and its dimming are ``viz/heatmap.py``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import altair as alt
import numpy as np

from lab.attention.sentence_maps import Kind, SentenceMaps, pick
from lab.attention.words import merge_columns, merge_mask, merge_rows, word_groups, word_labels
from lab.page.direction import Languages
from viz.heatmap import attention_frame, attention_heatmap, focus_frame, heads_grid, unit_scale, with_focus

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


# --- the followed token ---
# Follow one token through the three views: where it is a query (a row) and where it is a key (a column).
#
# A source token x_i is row i and column i of encoder self-attention and column i of cross-attention. An output
# token y_j (row j of the decoder views, ``tgt_out[j]``) is the row that predicts it in masked self-attention and in
# cross-attention, and — once generated — the decoder input at position j + 1, column j + 1 of masked
# self-attention (docs/attention-pitfalls.md §1).

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


# --- the chart ---


def which(layer: int, head: int | None) -> str:
    """A map's subtitle: "layer 4, mean of heads"."""
    return f"layer {layer + 1}, {'mean of heads' if head is None else f'head {head + 1}'}"


def axis_titles(kind: Kind, langs: Languages) -> tuple[str, str]:
    """(row title, column title): rows are queries, columns keys; a decoder row names its input and its prediction."""
    if kind == "encoder":
        return f"query: source token ({langs.src})", f"key: source token ({langs.src})"
    rows = f"query: input → predicts {langs.tgt}"  # no longer than a short map is high
    if kind == "decoder":
        return rows, f"key: {langs.tgt} input so far"
    return rows, f"key: source token ({langs.src})"


def short_axis_titles(kind: Kind, langs: Languages) -> tuple[str, str]:
    """(row title, column title) for small panels: "query (Spanish)", "input → predicts (English)", "key (Spanish)"."""
    rows = f"query ({langs.src})" if kind == "encoder" else f"input → predicts ({langs.tgt})"
    cols = langs.tgt if kind == "decoder" else langs.src
    return rows, f"key ({cols})"


def map_chart(
    view: MapView,
    layer: int,
    head: int | None,
    title: str,
    subtitle: str,
    langs: Languages,
    lit: Focus | None = None,
    shared: bool = True,
) -> alt.Chart:
    """One (rows, cols) map of ``view`` at ``layer`` and ``head`` (None: the mean of heads, a display choice made
    here), axes naming query and key, the followed token lit; on its own colour scale (not ``shared``), its subtitle
    prints the map's largest weight, the darkest colour's meaning."""
    weights = pick(view.weights, layer, head)
    frame = attention_frame(weights, view.row_labels, view.cols, view.future, view.inputs)
    if not shared:
        top = math.floor(float(np.max(weights, initial=0.0)) * 1000) / 1000  # never rounded up to a 1 it is not
        subtitle = f"{subtitle} · own scale, max {top:.3f}"
    if lit is not None and (lit.rows or lit.cols):
        frame = focus_frame(frame, lit.rows, lit.cols)
    chart = attention_heatmap(frame, title, *axis_titles(view.kind, langs), subtitle=subtitle)
    if "focus" in frame.columns:
        chart = with_focus(chart)
    return unit_scale(chart) if shared else chart


def grid_chart(
    view: MapView, layers: list[int], title: str, langs: Languages, lit: Focus, shared: bool
) -> alt.FacetChart:
    """The layers × heads small multiples of ``view`` (only ``layers``, see ``grid_plan``), the followed token lit."""
    frame = attention_frame(
        view.weights[layers], view.row_labels, view.cols, view.future, view.inputs, first_layer=layers[0] + 1
    )
    if lit.rows or lit.cols:
        frame = focus_frame(frame, lit.rows, lit.cols)
    grid = heads_grid(frame, title, *short_axis_titles(view.kind, langs))
    if "focus" in frame.columns:
        grid = with_focus(grid)
    return unit_scale(grid) if shared else grid
