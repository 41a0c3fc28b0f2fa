"""Attention heatmaps: one map (rows = queries, columns = keys) and the layers × heads small multiples."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

MASKED_COLOUR = "#e6e6e6"  # masked (future) cells: drawn as blank grey, never as a low weight
CELL = 18  # pixels per token (row) in a single map
MIN_HEIGHT, MAX_HEIGHT = 160, 640
SMALL_CELL = 12  # pixels per token in the small multiples
MAX_GRID_LABELS = 20  # longer sentences: small multiples without token labels
SCHEME = "blues"
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")  # fill the page's column, keep the given height


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Axis labels that keep repeated tokens apart: the second "the" becomes "the (2)"."""
    seen: dict[str, int] = {}
    out = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        out.append(token if seen[token] == 1 else f"{token} ({seen[token]})")
    return out


def attention_frame(
    weights: np.ndarray, rows: Sequence[str], cols: Sequence[str], future: np.ndarray | None = None
) -> pd.DataFrame:
    """(rows, cols) or (L, H, rows, cols) weights -> one tidy row per cell.

    Columns: [layer, head,] row, col, query, key (tokens), query_label, key_label (unique axis labels), weight, masked.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n_rows, n_cols = weights.shape[-2:]
    if (n_rows, n_cols) != (len(rows), len(cols)):
        raise ValueError(f"weights {weights.shape} do not match {len(rows)} row and {len(cols)} column labels")
    masked = np.zeros((n_rows, n_cols), dtype=bool) if future is None else np.asarray(future, dtype=bool)
    lead = weights.shape[:-2]  # () or (L, H)
    index = np.indices(weights.shape).reshape(weights.ndim, -1)  # (ndim, cells)
    r, c = index[-2], index[-1]
    frame = pd.DataFrame(
        {
            "row": r,
            "col": c,
            "query": np.asarray(rows, dtype=object)[r],
            "key": np.asarray(cols, dtype=object)[c],
            "query_label": np.asarray(unique_labels(rows), dtype=object)[r],
            "key_label": np.asarray(unique_labels(cols), dtype=object)[c],
            "weight": weights.reshape(-1),
            "masked": masked[r, c],
        }
    )
    if len(lead) == 2:
        frame.insert(0, "head", index[1] + 1)
        frame.insert(0, "layer", index[0] + 1)
    return frame


def _encodings(
    frame: pd.DataFrame, row_title: str, col_title: str, show_axes: bool = True, every_label: bool = True
) -> dict:
    """x/y/colour/tooltip shared by the single map and the small multiples; future cells grey."""
    rows = list(dict.fromkeys(frame.sort_values("row")["query_label"]))
    cols = list(dict.fromkeys(frame.sort_values("col")["key_label"]))
    axis = alt.Axis(labelAngle=-60, labelLimit=120, labelOverlap=not every_label) if show_axes else None
    weight = alt.Color(
        "weight:Q",
        title="weight",
        scale=alt.Scale(scheme=SCHEME, domainMin=0),
        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=140),
    )
    return {
        "x": alt.X("key_label:N", sort=cols, title=col_title, axis=axis),
        "y": alt.Y(
            "query_label:N",
            sort=rows,
            title=row_title,
            axis=alt.Axis(labelLimit=120, labelOverlap=not every_label) if show_axes else None,
        ),
        "color": alt.when(alt.datum.masked).then(alt.value(MASKED_COLOUR)).otherwise(weight),
        "tooltip": [
            alt.Tooltip("query:N", title="query token"),
            alt.Tooltip("key:N", title="key token"),
            alt.Tooltip("weight:Q", title="weight", format=".3f"),
            alt.Tooltip("masked:N", title="masked (future)"),
        ],
    }


def attention_heatmap(frame: pd.DataFrame, title: str, row_title: str, col_title: str, subtitle: str = "") -> alt.Chart:
    """One map from ``attention_frame``: row i at the top is the first query; width follows the container."""
    n_rows = frame["row"].nunique()
    return (
        alt.Chart(frame, title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined, anchor="start"))
        .mark_rect()
        .encode(**_encodings(frame, row_title, col_title))
        .properties(
            height=min(MAX_HEIGHT, max(MIN_HEIGHT, CELL * n_rows)),
            autosize=FIT_X,
        )
    )


def heads_grid(frame: pd.DataFrame, title: str, row_title: str, col_title: str) -> alt.FacetChart:
    """Small multiples of a (L, H, rows, cols) frame: one panel per layer (rows) and head (columns)."""
    n_rows, n_cols = frame["row"].nunique(), frame["col"].nunique()
    small = max(4, min(SMALL_CELL, 240 // max(n_rows, n_cols, 1)))
    encodings = _encodings(
        frame, row_title, col_title, show_axes=max(n_rows, n_cols) <= MAX_GRID_LABELS, every_label=False
    )
    encodings["tooltip"] = [alt.Tooltip("layer:O"), alt.Tooltip("head:O"), *encodings["tooltip"]]
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(**encodings)
        .properties(width=max(60, small * n_cols), height=max(60, small * n_rows))
        .facet(row=alt.Row("layer:O", title="layer"), column=alt.Column("head:O", title="head"))
        .properties(title=title)
    )
