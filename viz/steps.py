"""Step-by-step view: one row of attention as bars over the keys."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X, thinned, unique_labels


def row_frame(weights: np.ndarray, keys: Sequence[str]) -> pd.DataFrame:
    """(keys,) weights -> one row per key: position, token, unique label, weight."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (len(keys),):
        raise ValueError(f"weights {weights.shape} do not match {len(keys)} keys")
    return pd.DataFrame(
        {"position": range(len(keys)), "token": list(keys), "label": unique_labels(keys), "weight": weights}
    )


def row_chart(frame: pd.DataFrame, title: str, key_title: str) -> alt.Chart:
    """Bars of one query row, keys in sentence order (every k-th key labelled when there are too many to read)."""
    labels = list(frame["label"])
    values, step = thinned(labels)
    axis = alt.Axis(labelAngle=-60, values=values if step > 1 else alt.Undefined)
    title_x = key_title if step == 1 else f"{key_title} (1 label in {step})"
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("label:N", sort=labels, title=title_x, axis=axis),
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight"),
            tooltip=[alt.Tooltip("token:N", title="key token"), alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(height=220, autosize=FIT_X)
    )
