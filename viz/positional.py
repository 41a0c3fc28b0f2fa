"""Positional encoding: the position signal added to each embedding, positions × dimensions."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X, diverging_scale


def positional_frame(table: np.ndarray) -> pd.DataFrame:
    """(positions, d_model) -> one row per (position, dimension, value), in compact types (it is sent as is)."""
    table = np.asarray(table, dtype=np.float32)
    positions, dims = np.indices(table.shape).reshape(2, -1).astype(np.int16)
    return pd.DataFrame({"position": positions, "dimension": dims, "value": table.reshape(-1)})


LABEL_EVERY = (16, 8)  # an axis label every 16th dimension and every 8th position
ROW_PIXELS, MIN_HEIGHT, MAX_HEIGHT = 5, 240, 480  # tall enough to read the waves, never a page of rows


def positional_chart(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Heatmap: a row per position, a column per dimension, red/blue for +/−."""
    n_positions, n_dims = frame["position"].nunique(), frame["dimension"].nunique()
    limit = float(max(1.0, frame["value"].abs().max()))
    every_dim, every_pos = LABEL_EVERY
    return (
        alt.Chart(frame, title=title)
        .mark_rect()
        .encode(
            x=alt.X(
                "dimension:O", title="dimension", axis=alt.Axis(values=list(range(0, n_dims, every_dim)), labelAngle=0)
            ),
            y=alt.Y("position:O", title="position", axis=alt.Axis(values=list(range(0, n_positions, every_pos)))),
            color=alt.Color("value:Q", scale=diverging_scale(limit)),
            tooltip=["position:O", "dimension:O", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(height=min(MAX_HEIGHT, max(MIN_HEIGHT, ROW_PIXELS * n_positions)), autosize=FIT_X)
    )
