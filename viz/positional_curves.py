"""Positional encoding as curves: the value of a few dimensions along the positions, one line per dimension."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X

HEIGHT = 300


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


MAX_POINT_MARKS = 24  # past this many positions the dots hide the wave: lines only


def positional_curves(frame: pd.DataFrame, title: str, sentence: int) -> alt.LayerChart:
    """Lines of value against position, one colour per dimension: fast waves in low dimensions, slow in high.
    ``sentence``: the number of positions this sentence uses, shaded."""
    order = list(dict.fromkeys(frame["dimension"]))
    bounded = len(frame) and float(frame["value"].abs().max()) <= 1.0  # sinusoids; a learned table may exceed ±1
    # positions start at 0: the axis too (its "nice" start was −4, a position no token has)
    x = alt.X("position:Q", title="position", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(domainMin=0))
    lines = (
        alt.Chart(frame)
        .mark_line(point=frame["position"].nunique() <= MAX_POINT_MARKS)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="value", scale=alt.Scale(domain=[-1.1, 1.1]) if bounded else alt.Undefined),
            color=alt.Color("dimension:N", sort=order, title="dimension"),
            tooltip=["dimension:N", "position:Q", alt.Tooltip("value:Q", format=".3f")],
        )
    )
    band = alt.Data(values=[{"position": 0, "end": sentence - 0.5, "what": "this sentence"}])  # inline: one mark
    shade = alt.Chart(band).mark_rect(color="#eeeeee").encode(x=x, x2="end:Q", tooltip=["what:N"])
    return alt.layer(shade, lines, title=title).properties(height=HEIGHT, autosize=FIT_X)
