"""The arithmetic of one attention row: a table of q·k, score, mask, e^(s − max), weight, and bars of scores."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X, MASKED_COLOUR, WEIGHT_TEXT, diverging_scale, unique_labels, weight_expression

MINUS_INFINITY = "−∞"
MOST_DECIMALS = 12  # past this, scientific notation


def weight_text(value: float, decimals: int = 3) -> str:
    """A number in [0, 1] with ``decimals`` decimals, or as many more as it takes never to show a weight below 1 as
    "1.000" or a positive one as "0.000" ("0.99996", "2.1e-14", "1 − 1.0e-15"); exactly 0 and 1 print as "0" and
    "1"."""
    value = float(value)
    if value in (0.0, 1.0):
        return f"{value:.0f}"
    for places in range(decimals, MOST_DECIMALS + 1):
        text = f"{value:.{places}f}"
        if float(text) not in (0.0, 1.0):
            return text
    if value > 0.5:  # closer to 1 than MOST_DECIMALS show (float64 only): say how far
        return f"1 − {1 - value:.1e}"
    return f"{value:.{max(1, decimals - 1)}e}"


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
        .transform_calculate(**{WEIGHT_TEXT: weight_expression()})
        .mark_bar()
        .encode(
            x=alt.X("label:N", sort=list(frame["label"]), title=key_title, axis=alt.Axis(labelAngle=-60)),
            y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="weight (softmax)"),
            tooltip=[alt.Tooltip("key:N", title="key token"), alt.Tooltip(f"{WEIGHT_TEXT}:N", title="weight")],
        )
        .properties(height=200, autosize=FIT_X)
    )


def term_frame(
    keys: Sequence[str], weights: np.ndarray, values: np.ndarray, top: Sequence[int], context: np.ndarray
) -> pd.DataFrame:
    """The weighted sum as rows that add up: α_j·v_j for each key in ``top``, the rest of the keys summed, and the
    context vector Σ_j α_j v_j; one row per (term, component) with columns term, order, component (1-based), value."""
    weights, values = np.asarray(weights, dtype=np.float64), np.asarray(values, dtype=np.float64)
    top = [int(j) for j in top]
    rest = [j for j in range(len(keys)) if j not in set(top)]
    labels = unique_labels(keys)
    terms = [(f"α·v  {labels[j]} (α = {weight_text(weights[j])})", weights[j] * values[j]) for j in top]
    if rest:
        summed = weights[rest] @ values[rest]
        terms.append((f"Σ α·v  the other {len(rest)} (Σα = {weight_text(weights[rest].sum())})", summed))
    terms.append(("= context Σ α·v", np.asarray(context, dtype=np.float64)))
    d = values.shape[1]
    return pd.DataFrame(
        [
            {"term": label, "order": i, "component": c + 1, "value": float(vector[c])}
            for i, (label, vector) in enumerate(terms)
            for c in range(d)
        ]
    )


def vector_strips(frame: pd.DataFrame, title: str) -> alt.Chart:
    """One strip per row of a tidy (term, order, component, value) frame, on one diverging scale centred at 0
    (``viz.heatmap.DIVERGING_KEY``: negative red, positive blue)."""
    bound = float(frame["value"].abs().max()) or 1.0
    return (
        alt.Chart(frame, title=title)
        .mark_rect()
        .encode(
            x=alt.X("component:O", title="component", axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("term:N", sort=alt.SortField("order"), title=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("value:Q", title="value", scale=diverging_scale(bound)),
            tooltip=["term:N", "component:O", alt.Tooltip("value:Q", format=".4f")],
        )
        .properties(height=alt.Step(22), autosize=FIT_X)
    )


def head_norm_frame(norms: np.ndarray, chosen: int) -> pd.DataFrame:
    """One row per head: head (1-based label), ‖W_O slice · context‖, whether it is the head shown."""
    norms = np.asarray(norms, dtype=np.float64)
    return pd.DataFrame(
        {"head": [f"head {h + 1}" for h in range(len(norms))], "norm": norms, "shown": np.arange(len(norms)) == chosen}
    )


def head_norm_bars(frame: pd.DataFrame, title: str) -> alt.Chart:
    """The size of each head's contribution to the layer output at this row; the head shown in orange."""
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("head:N", sort=list(frame["head"]), title=None, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("norm:Q", title="‖contribution‖"),
            color=alt.condition(alt.datum.shown, alt.value("#f58518"), alt.value("#4c78a8")),
            tooltip=["head:N", alt.Tooltip("norm:Q", format=".4f")],
        )
        .properties(height=200, autosize=FIT_X)
    )
