"""Charts of the what-if tools: every head's effect, attribution rows beside attention, a map's change. Arrays +
token labels -> tidy frame -> chart."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X, diverging_scale, map_height, token_axis, unique_labels

CELL = 22  # pixels per row of a heat row chart


def head_effect_frame(
    kinds: Sequence[str], layers: Sequence[int], heads: Sequence[int], change: np.ndarray
) -> pd.DataFrame:
    """One row per head: kind, layer and head (1-based), change in log p(original output) when it alone is off."""
    return pd.DataFrame(
        {
            "kind": list(kinds),
            "layer": [int(x) + 1 for x in layers],
            "head": [int(x) + 1 for x in heads],
            "change": np.asarray(change, dtype=np.float64),
        }
    )


def head_effect_chart(frame: pd.DataFrame, title: str) -> alt.FacetChart:
    """A layers × heads grid per kind, coloured by the change (red: the output became less likely)."""
    bound = max(1e-6, float(frame["change"].abs().max()))
    return (
        alt.Chart(frame)
        .mark_rect(stroke="white")
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color(
                "change:Q",
                title="Δ log p",
                scale=diverging_scale(bound),
                legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160),
            ),
            tooltip=[
                alt.Tooltip("kind:N"),
                alt.Tooltip("layer:O"),
                alt.Tooltip("head:O"),
                alt.Tooltip("change:Q", title="Δ log p(original output)", format="+.3f"),
            ],
        )
        .properties(width=150, height=110)
        .facet(column=alt.Column("kind:N", title=None, sort=["encoder", "decoder", "cross"]), title=title)
    )


def heat_rows_frame(rows: dict[str, np.ndarray], tokens: Sequence[str]) -> pd.DataFrame:
    """One cell per (row, token): the value and the value scaled by the row's largest |value| (−1 … 1)."""
    labels = unique_labels(tokens)
    parts = []
    for name, values in rows.items():
        values = np.asarray(values, dtype=np.float64)
        peak = float(np.abs(values).max()) if values.size else 0.0
        parts.append(
            pd.DataFrame(
                {
                    "row": name,
                    "token": labels,
                    "position": np.arange(len(tokens)),
                    "value": values,
                    "scaled": values / peak if peak > 0 else values,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def heat_rows_chart(frame: pd.DataFrame, title: str, token_title: str) -> alt.Chart:
    """Rows of token cells on one −1 … 1 diverging scale (each row scaled by its own maximum, named in the row)."""
    rows = list(dict.fromkeys(frame["row"]))
    tokens = list(dict.fromkeys(frame["token"]))
    return (
        alt.Chart(frame, title=alt.TitleParams(title, anchor="start"))
        .mark_rect(stroke="white")
        .encode(
            x=alt.X("token:N", sort=tokens, title=token_title, axis=alt.Axis(labelAngle=-45, labelLimit=120)),
            y=alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("scaled:Q", scale=diverging_scale(1), legend=None),
            tooltip=[alt.Tooltip("row:N"), alt.Tooltip("token:N"), alt.Tooltip("value:Q", format="+.4f")],
        )
        .properties(height=CELL * len(rows) + 10, autosize=FIT_X)
    )


def change_frame(before: np.ndarray, after: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    """(rows, cols) maps -> one cell per entry: before, after and the change."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if before.shape != after.shape or before.shape != (len(rows), len(cols)):
        raise ValueError(f"maps {before.shape} and {after.shape} do not match {len(rows)} × {len(cols)} labels")
    r, c = np.indices(before.shape).reshape(2, -1)
    row_labels, col_labels = unique_labels(rows), unique_labels(cols)
    return pd.DataFrame(
        {
            "row_label": [row_labels[i] for i in r],
            "col_label": [col_labels[j] for j in c],
            "before": before[r, c],
            "after": after[r, c],
            "change": (after - before)[r, c],
        }
    )


def change_chart(frame: pd.DataFrame, title: str, row_title: str, col_title: str) -> alt.Chart:
    """The change of a map on a symmetric diverging scale (blue: more attention after the edit)."""
    rows = list(dict.fromkeys(frame["row_label"]))
    cols = list(dict.fromkeys(frame["col_label"]))
    bound = max(1e-6, float(frame["change"].abs().max()))
    (x_axis, x_title), (y_axis, y_title) = token_axis(cols, col_title, x=True), token_axis(rows, row_title, x=False)
    return (
        alt.Chart(frame, title=alt.TitleParams(title, subtitle=f"largest |change| {bound:.3f}", anchor="start"))
        .mark_rect()
        .encode(
            x=alt.X("col_label:N", sort=cols, title=x_title, axis=x_axis),
            y=alt.Y("row_label:N", sort=rows, title=y_title, axis=y_axis),  # every row labelled, as in the maps
            color=alt.Color(
                "change:Q",
                scale=diverging_scale(bound),
                legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=140),
            ),
            tooltip=[
                alt.Tooltip("row_label:N", title="output token"),
                alt.Tooltip("col_label:N", title="source word"),
                alt.Tooltip("before:Q", format=".3f"),
                alt.Tooltip("after:Q", format=".3f"),
                alt.Tooltip("change:Q", format="+.3f"),
            ],
        )
        .properties(height=map_height(len(rows)), autosize=FIT_X)
    )
