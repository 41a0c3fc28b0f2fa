"""Training curves from metrics.jsonl records: tidy DataFrame -> Altair line charts (pure: no torch, no streamlit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X

# (record kind, field) -> series name shown in the legend
LOSS_SERIES = {
    ("train", "loss"): "train loss (label-smoothed)",
    ("train", "nll"): "train NLL",
    ("eval", "dev_loss"): "dev NLL",
}
SCORE_SERIES = {("eval", "dev_bleu"): "dev BLEU", ("eval", "dev_chrf"): "dev chrF"}
TOY_SERIES = {("toy", "loss"): "train loss (nats)", ("toy", "accuracy"): "held-out sequences right (share)"}
COLUMNS = ["step", "series", "value"]
PLOT_HEIGHT = 260  # pixels of plot: the page fills the width, and the title, axis and legend come on top of this


def metrics_frame(records: Sequence[Mapping[str, Any]], series: Mapping[tuple[str, str], str]) -> pd.DataFrame:
    """Tidy (step, series, value) rows for the chosen fields; a step replayed after a resume keeps its last value."""
    rows = [
        {"step": int(r["step"]), "series": name, "value": float(r[field])}
        for r in records
        for (kind, field), name in series.items()
        if r.get("kind") == kind and isinstance(r.get(field), int | float) and isinstance(r.get("step"), int)
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame = frame.drop_duplicates(["series", "step"], keep="last")
    return frame.sort_values(["series", "step"], kind="stable").reset_index(drop=True)


def _line_chart(frame: pd.DataFrame, title: str, y_title: str, series: Mapping[tuple[str, str], str]) -> alt.Chart:
    """Value against step, one coloured line (with points) per series, with a hover tooltip. Each series keeps its
    colour from the first record on: the colours are given for every series of the chart, not for those drawn yet
    (a dev line appearing at the first evaluation took the colour of a train line)."""
    return (
        alt.Chart(frame, title=title)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step", axis=alt.Axis(format="d", tickMinStep=1)),  # whole steps from step 1
            # "~g": a value that does not change (every BLEU 0) drew its tick as d3's default "0.000000"
            y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False), axis=alt.Axis(format="~g")),
            color=alt.Color(
                "series:N",
                title=None,
                legend=alt.Legend(orient="bottom"),
                scale=alt.Scale(domain=list(series.values())),
            ),
            tooltip=[alt.Tooltip("series:N"), alt.Tooltip("step:Q"), alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(height=PLOT_HEIGHT, autosize=FIT_X)
    )


def loss_chart(records: Sequence[Mapping[str, Any]]) -> alt.Chart:
    """Training loss (label-smoothed), training NLL and dev NLL per token against step."""
    return _line_chart(metrics_frame(records, LOSS_SERIES), "Loss per target token", "loss (nats)", LOSS_SERIES)


def score_chart(records: Sequence[Mapping[str, Any]]) -> alt.Chart:
    """Dev BLEU and chrF (greedy, on the first dev sentences) at each evaluation."""
    return _line_chart(metrics_frame(records, SCORE_SERIES), "Dev BLEU and chrF", "score", SCORE_SERIES)


def toy_chart(records: Sequence[Mapping[str, Any]]) -> alt.Chart:
    """A toy run's loss and held-out accuracy on one axis: both live in 0..~3, and one falls as the other rises."""
    return _line_chart(metrics_frame(records, TOY_SERIES), "Loss and held-out accuracy", "nats · share", TOY_SERIES)


def probe_frame(weights: Sequence[Sequence[float]], rows: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    """Tidy (row, col, weight) cells of one attention map; rows and columns numbered so repeated pieces stay apart."""
    cells = [
        {"row": f"{i + 1}. {rows[i]}", "col": f"{j + 1}. {cols[j]}", "weight": float(value), "i": i, "j": j}
        for i, row in enumerate(weights[: len(rows)])
        for j, value in enumerate(row[: len(cols)])
    ]
    return pd.DataFrame(cells, columns=["row", "col", "weight", "i", "j"])


def probe_chart(weights: Sequence[Sequence[float]], rows: Sequence[str], cols: Sequence[str], title: str) -> alt.Chart:
    """One probe sentence's attention map (rows attend to columns) as a heatmap, weights 0..1."""
    frame = probe_frame(weights, rows, cols)
    return (
        alt.Chart(frame, title=title)
        .mark_rect()
        .encode(
            x=alt.X("col:N", sort=alt.EncodingSortField("j"), title="attends to"),
            y=alt.Y("row:N", sort=alt.EncodingSortField("i"), title=None),
            color=alt.Color("weight:Q", scale=alt.Scale(domain=[0, 1], scheme="blues")),
            tooltip=[alt.Tooltip("row:N"), alt.Tooltip("col:N"), alt.Tooltip("weight:Q", format=".2f")],
        )
        .properties(autosize=FIT_X)
    )
