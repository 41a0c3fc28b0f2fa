"""The arithmetic of one attention row: a table of q·k, score, mask, e^(s − max), weight, and bars of scores."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X, MASKED_COLOUR, unique_labels

MINUS_INFINITY = "−∞"


def arithmetic_frame(
    keys: Sequence[str],
    dots: np.ndarray,
    scores: np.ndarray,
    allowed: np.ndarray,
    exps: np.ndarray,
    weights: np.ndarray,
) -> pd.DataFrame:
    """One row per key: position (1-based), token, q·k, score = q·k/√d, mask M, e^(s − max s), weight, masked."""
    allowed = np.asarray(allowed, dtype=bool)
    n = len(keys)
    if not all(np.shape(a) == (n,) for a in (dots, scores, allowed, exps, weights)):
        raise ValueError(f"every column needs {n} values, one per key")
    return pd.DataFrame(
        {
            "position": np.arange(1, n + 1),
            "key": list(keys),
            "label": unique_labels(keys),
            "q·k": np.asarray(dots, dtype=np.float64),
            "score": np.asarray(scores, dtype=np.float64),
            "mask M": np.where(allowed, "0", MINUS_INFINITY),
            "e^(s − max s)": np.asarray(exps, dtype=np.float64),
            "weight": np.asarray(weights, dtype=np.float64),
            "masked": ~allowed,
        }
    )


def score_chart(frame: pd.DataFrame, title: str, key_title: str) -> alt.LayerChart:
    """Scores q·k/√d per key as bars (negative ones below 0); masked keys as grey "−∞" marks at 0."""
    order = list(frame["label"])
    visible = frame[~frame["masked"]]
    masked = frame[frame["masked"]].assign(shown=0.0)
    x = alt.X("label:N", sort=order, title=key_title, axis=alt.Axis(labelAngle=-60))
    bars = (
        alt.Chart(visible)
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y("score:Q", title="score q·k/√d_head"),
            color=alt.condition(alt.datum.score >= 0, alt.value("#4c78a8"), alt.value("#e45756")),
            tooltip=[alt.Tooltip("key:N", title="key token"), alt.Tooltip("score:Q", format=".3f")],
        )
    )
    blanks = (
        alt.Chart(masked)
        .mark_text(text=MINUS_INFINITY, color="#888888", fontSize=14, baseline="bottom")
        .encode(x=x, y=alt.Y("shown:Q"), tooltip=[alt.Tooltip("key:N", title="masked key")])
    )
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color=MASKED_COLOUR).encode(y="y:Q")
    return alt.layer(bars, blanks, zero, title=title).properties(height=200, autosize=FIT_X)


def weight_bars(frame: pd.DataFrame, title: str, key_title: str) -> alt.Chart:
    """The resulting weights on a fixed 0–1 axis; masked keys carry exactly 0."""
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("label:N", sort=list(frame["label"]), title=key_title, axis=alt.Axis(labelAngle=-60)),
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight (softmax)"),
            tooltip=[alt.Tooltip("key:N", title="key token"), alt.Tooltip("weight:Q", format=".4f")],
        )
        .properties(height=200, autosize=FIT_X)
    )
