"""The training set as a map: a scatter of training pairs (coloured by length, the pair on hover), the nearest pairs
ringed and the typed sentence marked (pure: a DataFrame in, an Altair chart out)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

HEIGHT = 420
POINT, NEAREST, SENTENCE = "training pair", "nearest pair", "your sentence"
COLUMNS = ["x", "y", "words", "source", "target", "kind"]


def map_frame(points: np.ndarray, sources: list[str], targets: list[str], kind: str = POINT) -> pd.DataFrame:
    """Rows of the map: (n, 2) ``points`` with their pair's texts and length in source words."""
    return pd.DataFrame(
        {
            "x": points[:, 0].round(4),
            "y": points[:, 1].round(4),
            "words": [len(s.split()) for s in sources],
            "source": sources,
            "target": targets,
            "kind": kind,
        },
        columns=COLUMNS,
    )


def training_map(frame: pd.DataFrame, title: str, src_title: str, tgt_title: str) -> alt.LayerChart:
    """Training pairs as dots coloured by their source's length in words; ``NEAREST`` rows ringed, the ``SENTENCE``
    row a large cross; each with its pair (or sentence) on hover."""
    tooltip = [alt.Tooltip("source:N", title=src_title), alt.Tooltip("target:N", title=tgt_title), "words:Q"]
    axis = {"x": alt.X("x:Q", title="main direction 1"), "y": alt.Y("y:Q", title="main direction 2")}
    base = alt.Chart(frame, title=title).encode(**axis, tooltip=tooltip)
    dots = (
        base.transform_filter(alt.datum.kind == POINT)
        .mark_circle(size=9, opacity=0.5)
        .encode(color=alt.Color("words:Q", title="source words", scale=alt.Scale(scheme="viridis", type="log")))
    )
    rings = base.transform_filter(alt.datum.kind == NEAREST).mark_point(size=90, color="#d62728", strokeWidth=2)
    cross = base.transform_filter(alt.datum.kind == SENTENCE).mark_point(
        shape="cross", size=260, color="black", filled=True
    )
    return (dots + rings + cross).properties(height=HEIGHT, autosize=alt.AutoSizeParams(type="fit-x"))
