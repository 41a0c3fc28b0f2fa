"""Attention heatmaps: one map (rows = queries, columns = keys) and the layers × heads small multiples; their reading
aids: a followed token lit (the rest dimmed), clicks that choose, one shared 0–1 colour scale."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import altair as alt
import numpy as np
import pandas as pd

MASKED_COLOUR = "#e6e6e6"  # masked (future) cells: drawn as blank grey, never as a low weight
CELL = 20  # pixels per token (row) in a single map
MIN_HEIGHT, MAX_HEIGHT = 192, 640  # a short sentence's three maps and the translation fit one 1600×1000 screen
SMALL_CELL = 16  # pixels per token in the small multiples: room for a 10-px token label per row
MIN_PANEL = 100  # pixels: a panel is never shorter than its axis title ("query (English)"), or the titles run on
MAX_GRID_LABELS = 20  # longer sentences: small multiples without token labels
MAX_AXIS_LABELS = 24  # more tokens than this on an axis: label every k-th one (beyond ~30 they collide)
# A map fills its column of the page (three side by side on a 1280-px screen): its cells take what the row labels
# and the axis title leave (the colour legend lies under the map), and where the columns grow too narrow for upright
# labels the browser drops every other one until none touch.
ROW_LABEL_LIMIT, COL_LABEL_LIMIT = 80, 56  # pixels of text a row or column label may take (longer: cut with …)
LABEL_SIZE = 11  # pixels: a label's box is ~1.33 of it tall, so 13 upright labels fit 180 px of cells
SCHEME = "blues"
# The diverging scale of every signed chart, centred at 0: Vega's "redblue" runs from red at the domain's low end to
# blue at its high end, so negative is red and positive blue (never ``reverse``: the captions read these names).
DIVERGING_SCHEME = "redblue"
NEGATIVE_COLOUR, POSITIVE_COLOUR = "red", "blue"
DIVERGING_KEY = f"{NEGATIVE_COLOUR.capitalize()} is negative, {POSITIVE_COLOUR} positive"  # what a caption says
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")  # fill the page's column, keep the given height


# under the map, its title beside the gradient: the cells keep the map's whole width
LEGEND = alt.Legend(
    orient="bottom",
    direction="horizontal",
    gradientLength=80,
    gradientThickness=8,
    offset=6,
    titleFontSize=10,
    titleOrient="left",
    titleAnchor="middle",
)
CELL_SELECTION = "cell_pick"  # click on a map cell: its row's token becomes the followed token
PANEL_SELECTION = "panel_pick"  # click on a panel of the layers × heads grid: that layer and head become the view
DIMMED = 0.2  # opacity of cells outside the followed token's rows and columns
WEIGHT_TEXT = "weight_text"  # the field the tooltips print a weight from (``weight_expression``)


def weight_expression(field: str = "weight") -> str:
    """A Vega expression printing a weight as ``viz.arithmetic.weight_text`` does in short: 3 decimals, but a weight
    below 1 never reads "1.000" ("1 − 4.0e-5") nor a positive one "0.000" ("2.1e-5"); exactly 0 and 1 read "0" and
    "1". An expression, not a column, so no text travels per cell."""
    w = f"datum[{field!r}]"
    three = f"format({w}, '.3f')"
    return (
        f"{w} >= 1 ? '1' : {w} <= 0 ? '0' : {three} == '1.000' ? '1 − ' + format(1 - {w}, '.1e') : "
        f"{three} == '0.000' ? format({w}, '.1e') : {three}"
    )


def diverging_scale(bound: float) -> alt.Scale:
    """The diverging scale on [−bound, bound]: negative values red, positive blue, 0 white (``DIVERGING_KEY``)."""
    return alt.Scale(scheme=DIVERGING_SCHEME, domain=[-bound, bound])


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Axis labels that keep repeated tokens apart: the second "the" becomes "the (2)"; all labels distinct."""
    counts: dict[str, int] = {}
    used: set[str] = set()
    out = []
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
        label = token if counts[token] == 1 else f"{token} ({counts[token]})"
        while label in used:  # a token that itself reads "the (2)"
            counts[token] += 1
            label = f"{token} ({counts[token]})"
        used.add(label)
        out.append(label)
    return out


def thinned(labels: Sequence[str], most: int = MAX_AXIS_LABELS) -> tuple[list[str], int]:
    """Every k-th label, k the smallest step that leaves at most ``most`` of them (k = 1 when all fit)."""
    step = max(1, math.ceil(len(labels) / max(1, most)))
    return list(labels[::step]), step


def map_height(n_rows: int) -> int:
    """Pixels for a map of ``n_rows`` rows: CELL per row, within MIN_HEIGHT … MAX_HEIGHT."""
    return min(MAX_HEIGHT, max(MIN_HEIGHT, CELL * n_rows))


def _categories(labels: Sequence[str], codes: np.ndarray) -> pd.Categorical:
    """One label per cell, sent once per distinct label (Arrow dictionary) instead of once per cell."""
    categories = list(dict.fromkeys(labels))
    index = {label: i for i, label in enumerate(categories)}
    return pd.Categorical.from_codes(np.array([index[x] for x in labels], dtype=np.int32)[codes], categories)


def attention_frame(
    weights: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    future: np.ndarray | None = None,
    inputs: Sequence[str] | None = None,
    first_layer: int = 1,
) -> pd.DataFrame:
    """(rows, cols) or (L, H, rows, cols) weights -> one tidy, compact row per cell.

    Columns: [layer, head,] row, col, row_label, col_label (unique axis labels), [row_input,] weight, masked.
    ``inputs`` names the decoder input(s) each row's query is computed at, for the tooltip: in the decoder, row i is
    computed at input token i and predicts token i+1, and its label names both ("<s> → ▁She",
    docs/attention-pitfalls.md §1). Layers are numbered from ``first_layer`` (when only some layers are drawn),
    heads from 1.
    """
    weights = np.asarray(weights, dtype=np.float32)
    n_rows, n_cols = weights.shape[-2:]
    if (n_rows, n_cols) != (len(rows), len(cols)) or (inputs is not None and len(inputs) != n_rows):
        raise ValueError(f"weights {weights.shape} do not match {len(rows)} row and {len(cols)} column labels")
    masked = np.zeros((n_rows, n_cols), dtype=bool) if future is None else np.asarray(future, dtype=bool)
    index = np.indices(weights.shape).reshape(weights.ndim, -1)  # (ndim, cells)
    r, c = index[-2], index[-1]
    columns = {
        "row": r.astype(np.int16),
        "col": c.astype(np.int16),
        "row_label": _categories(unique_labels(rows), r),
        "col_label": _categories(unique_labels(cols), c),
    }
    if inputs is not None:
        columns["row_input"] = _categories(list(inputs), r)
    frame = pd.DataFrame({**columns, "weight": weights.reshape(-1), "masked": masked[r, c]})
    if weights.ndim == 4:
        frame.insert(0, "head", (index[1] + 1).astype(np.int8))
        frame.insert(0, "layer", (index[0] + first_layer).astype(np.int8))
    return frame


def token_axis(labels: list[str], title: str, x: bool, show: bool = True) -> tuple[alt.Axis | None, str]:
    """An axis of token labels that labels every token up to MAX_AXIS_LABELS (every k-th beyond), and its title
    saying so. Rows have room for each label; column labels stand upright, and where columns are narrower than a
    label is tall, the browser shows every other one ("parity") until none overlap."""
    if not show:
        return None, title
    values, step = thinned(labels)
    if x:
        style = {"labelAngle": -90, "labelLimit": COL_LABEL_LIMIT, "labelOverlap": "parity", "labelSeparation": 4}
    else:
        style = {"labelLimit": ROW_LABEL_LIMIT, "labelOverlap": False}
    axis = alt.Axis(
        values=values if step > 1 else alt.Undefined, tickSize=0, labelPadding=3, labelFontSize=LABEL_SIZE, **style
    )
    return axis, title if step == 1 else f"{title} (1 label in {step})"


def _tooltip(frame: pd.DataFrame) -> list[alt.Tooltip]:
    """Row, column, weight; a decoder row names both its query (the decoder input) and what it predicts."""
    if "row_input" in frame.columns:
        rows = [
            alt.Tooltip("row_label:N", title="query: input → predicts"),
            alt.Tooltip("row_input:N", title="computed at decoder input"),
        ]
    else:
        rows = [alt.Tooltip("row_label:N", title="query token")]
    tips = [*rows, alt.Tooltip("col_label:N", title="key token"), alt.Tooltip(f"{WEIGHT_TEXT}:N", title="weight")]
    if frame["masked"].any():
        tips.append(alt.Tooltip("masked:N", title="masked (future)"))
    return tips


def _encodings(frame: pd.DataFrame, row_title: str, col_title: str, show_axes: bool = True) -> dict:
    """x/y/colour/tooltip shared by the single map and the small multiples; future cells grey."""
    rows = [str(x) for x in frame["row_label"].cat.categories]  # every row label, in sentence order
    cols = [str(x) for x in frame["col_label"].cat.categories]
    x_axis, x_title = token_axis(cols, col_title, x=True, show=show_axes)
    y_axis, y_title = token_axis(rows, row_title, x=False, show=show_axes)
    weight = alt.Color("weight:Q", title="attention weight", scale=alt.Scale(scheme=SCHEME, domainMin=0), legend=LEGEND)
    return {
        "x": alt.X("col_label:N", sort=cols, title=x_title, axis=x_axis),
        "y": alt.Y("row_label:N", sort=rows, title=y_title, axis=y_axis),
        "color": alt.when(alt.datum.masked).then(alt.value(MASKED_COLOUR)).otherwise(weight),
        "tooltip": _tooltip(frame),
    }


def attention_heatmap(frame: pd.DataFrame, title: str, row_title: str, col_title: str, subtitle: str = "") -> alt.Chart:
    """One map from ``attention_frame``: row i at the top is the first query; width follows the container."""
    return _map(frame, title, subtitle, weight_expression(), _encodings(frame, row_title, col_title))


def _map(frame: pd.DataFrame, title: str, subtitle: str, weight_text: str, encodings: dict) -> alt.Chart:
    n_rows = len(frame["row_label"].cat.categories)
    return (
        alt.Chart(frame, title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined, anchor="start", offset=4))
        .transform_calculate(**{WEIGHT_TEXT: weight_text})
        .mark_rect()
        .encode(**encodings)
        .properties(height=map_height(n_rows), autosize=FIT_X)
    )


def difference_heatmap(
    frame: pd.DataFrame, title: str, row_title: str, col_title: str, subtitle: str = ""
) -> alt.Chart:
    """A map of B − A from ``attention_frame`` (its ``weight`` the change): on one fixed −1 … 1 diverging scale, so
    the same colour is the same change in every such map (blue: B attends more); the tooltip prints the sign."""
    encodings = _encodings(frame, row_title, col_title)
    change = alt.Color("weight:Q", title="B − A", scale=diverging_scale(1.0), legend=LEGEND)
    encodings["color"] = alt.when(alt.datum.masked).then(alt.value(MASKED_COLOUR)).otherwise(change)
    weight_tip = f"{WEIGHT_TEXT}:N"
    encodings["tooltip"] = [
        alt.Tooltip(weight_tip, title="B − A") if t.shorthand == weight_tip else t for t in encodings["tooltip"]
    ]
    return _map(frame, title, subtitle, "format(datum.weight, '+.3f')", encodings)


def heads_grid(frame: pd.DataFrame, title: str, row_title: str, col_title: str) -> alt.FacetChart:
    """Small multiples of a (L, H, rows, cols) frame: one panel per layer (rows) and head (columns)."""
    n_rows, n_cols = len(frame["row_label"].cat.categories), len(frame["col_label"].cat.categories)
    small = max(4, min(SMALL_CELL, 240 // max(n_rows, n_cols, 1)))
    encodings = _encodings(frame, row_title, col_title, show_axes=max(n_rows, n_cols) <= MAX_GRID_LABELS)
    encodings["tooltip"] = [alt.Tooltip("layer:O"), alt.Tooltip("head:O"), *encodings["tooltip"]]
    return (
        alt.Chart(frame)
        .transform_calculate(**{WEIGHT_TEXT: weight_expression()})
        .mark_rect()
        .encode(**encodings)
        .properties(width=max(MIN_PANEL, small * n_cols), height=max(MIN_PANEL, small * n_rows))
        .facet(row=alt.Row("layer:O", title="layer"), column=alt.Column("head:O", title="head"))
        .properties(title=title)
    )


def focus_frame(frame: pd.DataFrame, rows: Collection[int], cols: Collection[int]) -> pd.DataFrame:
    """A copy of an ``attention_frame`` with a ``focus`` column: True in the given rows and columns."""
    out = frame.copy()
    out["focus"] = frame["row"].isin(list(rows)) | frame["col"].isin(list(cols))
    return out


def with_focus(chart: alt.Chart | alt.FacetChart) -> alt.Chart | alt.FacetChart:
    """Full opacity where ``focus`` is True, dimmed elsewhere (the chart's data needs a ``focus`` column)."""
    opacity = alt.when(alt.datum.focus).then(alt.value(1.0)).otherwise(alt.value(DIMMED))
    if isinstance(chart, alt.FacetChart):
        out = chart.copy()
        out.spec = chart.spec.encode(opacity=opacity)
        return out
    return chart.encode(opacity=opacity)


def unit_scale(chart: alt.Chart | alt.FacetChart) -> alt.Chart | alt.FacetChart:
    """The weight colour on a fixed 0–1 scale, so that the same colour means the same weight in every view."""
    inner = chart.spec if isinstance(chart, alt.FacetChart) else chart
    colour = inner.encoding.color
    colour = colour.scale(scheme=colour["scale"]["scheme"], domain=[0, 1])  # a copy; condition and legend kept
    if isinstance(chart, alt.FacetChart):
        out = chart.copy()
        out.spec = inner.encode(color=colour)
        return out
    return chart.encode(color=colour)


def clickable(chart: alt.Chart | alt.FacetChart, name: str, fields: list[str]) -> alt.Chart | alt.FacetChart:
    """Add a click selection ``name`` on ``fields`` (read back by Streamlit's ``on_select``)."""
    return chart.add_params(alt.selection_point(name=name, fields=fields, on="click", clear="dblclick"))
