"""Alignment view: the two sentences one above the other, a line from each target unit to its source unit."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X, thinned

SOURCE_Y, TARGET_Y = 1.0, 0.0  # the source sentence on top, the target below
SOURCE_COLOUR, TARGET_COLOUR = "#d62728", "#1f77b4"
HORIZONTAL_UP_TO = 14  # more tokens than this on a side: tilt the labels so they do not overlap
MAX_WORDS_SHOWN = 40  # more tokens than this on a side: write every k-th one (the dots and tooltips keep them all)


def _spread(n: int) -> list[float]:
    """x positions in [0, 1] for n tokens, evenly spaced, so sentences of different lengths share the width."""
    return [(i + 0.5) / n for i in range(n)]


def side_names(src_name: str, tgt_name: str) -> tuple[str, str]:
    """How the two sides are labelled: the language names ("Spanish", "English"), told apart when they are equal."""
    return (src_name, tgt_name) if src_name != tgt_name else (f"{src_name} (source)", f"{tgt_name} (target)")


def alignment_frames(
    source: Sequence[str],
    target: Sequence[str],
    links: Sequence[tuple[int, int, float]],
    src_name: str,
    tgt_name: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tokens, links): tokens with side/position/x/y/written; one row per (target, source, weight) link.

    ``side`` is the language name of the token's sentence (``side_names``); ``written`` is False for the tokens
    left unwritten when a side has more than MAX_WORDS_SHOWN.
    """
    src_side, tgt_side = side_names(src_name, tgt_name)
    sx, tx = _spread(len(source)), _spread(len(target))
    s_step, t_step = thinned(source, MAX_WORDS_SHOWN)[1], thinned(target, MAX_WORDS_SHOWN)[1]
    tokens = pd.DataFrame(
        [
            {"side": src_side, "position": i, "token": t, "x": sx[i], "y": SOURCE_Y, "written": i % s_step == 0}
            for i, t in enumerate(source)
        ]
        + [
            {"side": tgt_side, "position": i, "token": t, "x": tx[i], "y": TARGET_Y, "written": i % t_step == 0}
            for i, t in enumerate(target)
        ],
        columns=["side", "position", "token", "x", "y", "written"],
    )
    rows = [
        {"target": target[t], "source": source[s], "weight": w, "x": tx[t], "y": TARGET_Y, "x2": sx[s], "y2": SOURCE_Y}
        for t, s, w in links
    ]
    return tokens, pd.DataFrame(rows, columns=["target", "source", "weight", "x", "y", "x2", "y2"])


def alignment_chart(
    tokens: pd.DataFrame, links: pd.DataFrame, title: str, src_name: str, tgt_name: str
) -> alt.LayerChart:
    """Lines (opacity = weight) between the target words below and the source words above.

    ``src_name``/``tgt_name``: the languages, as given to ``alignment_frames`` (sides, colours, tooltips).
    """
    src_side, tgt_side = side_names(src_name, tgt_name)
    colours = {src_side: SOURCE_COLOUR, tgt_side: TARGET_COLOUR}
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-0.6, 1.6]))
    lines = (
        alt.Chart(links)
        .mark_rule(color="#555555", strokeWidth=2)
        .encode(
            x=x,
            y=y,
            x2="x2:Q",
            y2="y2:Q",
            opacity=alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0.15, 1]), legend=None),
            tooltip=[
                alt.Tooltip("target:N", title=tgt_side),
                alt.Tooltip("source:N", title=src_side),
                alt.Tooltip("weight:Q", format=".3f"),
            ],
        )
    )

    def words(side: str, angle: int, dy: int) -> alt.Chart:
        return (
            alt.Chart(tokens)
            .transform_filter((alt.datum.side == side) & alt.datum.written)
            .mark_text(fontSize=13, angle=angle, align="left" if angle else "center", dy=dy, color=colours[side])
            .encode(x=x, y=y, text="token:N", tooltip=[alt.Tooltip("side:N"), alt.Tooltip("token:N")])
        )

    points = (
        alt.Chart(tokens)
        .mark_point(filled=True, size=25)
        .encode(
            x=x,
            y=y,
            color=alt.Color("side:N", scale=alt.Scale(domain=list(colours), range=list(colours.values()))),
            tooltip=[alt.Tooltip("side:N"), alt.Tooltip("token:N")],
        )
    )
    tilt = tokens.groupby("side").size().max() > HORIZONTAL_UP_TO if len(tokens) else False
    above = words(src_side, 315 if tilt else 0, -8)
    below = words(tgt_side, 45 if tilt else 0, 14)
    return alt.layer(lines, points, above, below, title=title).properties(height=260, autosize=FIT_X)
