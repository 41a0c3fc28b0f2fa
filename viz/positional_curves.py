"""Positional encoding as curves: the value of a few dimensions along the positions, one line per dimension."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X


def default_dimensions(d_model: int, n: int = 4) -> list[int]:
    """``n`` even (sine) dimensions from fast to slow, spread over the first quarter (the later ones barely move)."""
    if d_model < 2:
        return [0]
    picks = np.unique(np.round(np.geomspace(1, max(1, d_model // 8), n)).astype(int) - 1) * 2  # even: sines
    return [int(d) for d in picks if d < d_model]


def curves_frame(table: np.ndarray, dimensions: Sequence[int]) -> pd.DataFrame:
    """(positions, d_model) -> one row per (position, chosen dimension, value)."""
    table = np.asarray(table, dtype=np.float64)
    dims = [d for d in dict.fromkeys(dimensions) if 0 <= d < table.shape[1]]
    positions = np.arange(table.shape[0])
    return pd.DataFrame(
        {
            "position": np.tile(positions, len(dims)),
            "dimension": np.repeat([f"dim {d}" for d in dims], len(positions)),
            "value": table[:, dims].T.reshape(-1),  # (dims, positions) -> flat, dimension-major
        }
    )


def positional_curves(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Lines of value against position, one colour per dimension: fast waves in low dimensions, slow in high."""
    order = list(dict.fromkeys(frame["dimension"]))
    bounded = len(frame) and float(frame["value"].abs().max()) <= 1.0  # sinusoids; a learned table may exceed ±1
    return (
        alt.Chart(frame, title=title)
        .mark_line(point=True)
        .encode(
            x=alt.X("position:Q", title="position", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("value:Q", title="value", scale=alt.Scale(domain=[-1.1, 1.1]) if bounded else alt.Undefined),
            color=alt.Color("dimension:N", sort=order, title="dimension"),
            tooltip=["dimension:N", "position:Q", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(height=260, autosize=FIT_X)
    )
