"""Step-by-step decoding: the most probable next tokens at one step, the chosen one highlighted."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X, unique_labels

CHOSEN_COLOUR = "#f58518"
PROBABILITY_TICKS = [0.0, 0.5, 1.0]  # a 0–1 axis needs few ticks: 21 crowd a narrow column
OTHER_COLOUR = "#9ecae9"


def choice_frame(top: Sequence[tuple[str, float]], chosen: str, chosen_prob: float) -> pd.DataFrame:
    """The top tokens (most probable first) and, when the search took another one (beam), that one last."""
    rows = list(top)
    if chosen not in [token for token, _ in rows]:
        rows.append((chosen, chosen_prob))
    tokens = [token for token, _ in rows]
    return pd.DataFrame(
        {
            "token": tokens,
            "label": unique_labels(tokens),
            "probability": [float(p) for _, p in rows],
            "chosen": [token == chosen for token in tokens],
        }
    )


def choice_chart(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Horizontal bars of probability on a 0–1 axis; the chosen token in orange."""
    colour = alt.when(alt.datum.chosen).then(alt.value(CHOSEN_COLOUR)).otherwise(alt.value(OTHER_COLOUR))
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", sort=list(frame["label"]), title="next token"),
            x=alt.X(
                "probability:Q",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(values=PROBABILITY_TICKS, format=".1f"),
                title="probability",
            ),
            color=colour,
            tooltip=[
                alt.Tooltip("token:N"),
                alt.Tooltip("probability:Q", format=".3f"),
                alt.Tooltip("chosen:N", title="chosen"),
            ],
        )
        .properties(height=max(100, 26 * len(frame)), autosize=FIT_X)
    )
