"""Alignment view: the two sentences one above the other, a line from each target unit to its source unit; and
two alignments of one pair in one drawing (the attention's and people's), each line coloured by who drew it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X, thinned

SOURCE_Y, TARGET_Y = 1.0, 0.0  # the source sentence on top, the target below
SOURCE_COLOUR, TARGET_COLOUR = "#d62728", "#1f77b4"
HORIZONTAL_UP_TO = 14  # more tokens than this on a side: tilt the labels so they do not overlap
MAX_WORDS_SHOWN = 40  # more tokens than this on a side: write every k-th one (the dots and tooltips keep them all)
BOTH, ATTENTION, PEOPLE = "model and people", "model only", "people only"  # attention or attribution
AGREEMENT = {BOTH: "#2ca02c", ATTENTION: "#ff7f0e", PEOPLE: "#7f7f7f"}  # who drew a link -> its colour


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
    """(tokens, links): tokens with side (``side_names``), position, x, y and written (False for those left unwritten
    past MAX_WORDS_SHOWN on a side); one row per (target, source, weight) link."""
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


def _axes() -> tuple[alt.X, alt.Y]:
    """x across the width; y: the source on top (SOURCE_Y), the target below (TARGET_Y), room for the words."""
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[0, 1]))
    return x, alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-0.6, 1.6]))


def _sentences(tokens: pd.DataFrame, src_side: str, tgt_side: str) -> list[alt.Chart]:
    """The two sentences: a dot per token, the source's words written above, the target's below."""
    colours = {src_side: SOURCE_COLOUR, tgt_side: TARGET_COLOUR}
    x, y = _axes()

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
    return [points, words(src_side, 315 if tilt else 0, -8), words(tgt_side, 45 if tilt else 0, 14)]


def alignment_chart(
    tokens: pd.DataFrame, links: pd.DataFrame, title: str, src_name: str, tgt_name: str
) -> alt.LayerChart:
    """Lines (opacity = weight) between the target words below and the source words above."""
    lines = alt.Chart(links).mark_rule(color="#555555", strokeWidth=2)
    opacity = alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0.15, 1]), legend=None)
    return _drawing(tokens, lines, title, src_name, tgt_name, [alt.Tooltip("weight:Q", format=".3f")], opacity=opacity)


def _drawing(
    tokens: pd.DataFrame, lines: alt.Chart, title: str, src_name: str, tgt_name: str, tooltip: list, **encodings
) -> alt.LayerChart:
    """``lines`` from each link's target unit to its source unit, drawn over the two sentences."""
    src_side, tgt_side = side_names(src_name, tgt_name)
    x, y = _axes()
    sides = [alt.Tooltip("target:N", title=tgt_side), alt.Tooltip("source:N", title=src_side)]
    lines = lines.encode(x=x, y=y, x2="x2:Q", y2="y2:Q", tooltip=sides + tooltip, **encodings)
    return alt.layer(lines, *_sentences(tokens, src_side, tgt_side), title=title).properties(height=260, autosize=FIT_X)


def agreement_frames(
    source: Sequence[str],
    target: Sequence[str],
    drawn: dict[tuple[int, int], float],
    gold: Iterable[tuple[int, int]],
    src_name: str,
    tgt_name: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tokens, links) for two alignments of one sentence pair, ``drawn`` (target, source) -> weight and ``gold``:
    each link of either once, ``drawn by`` one of AGREEMENT (weight NaN where only people drew it)."""
    gold = set(gold)
    links = [(t, s, drawn.get((t, s), float("nan"))) for t, s in sorted(set(drawn) | gold)]
    tokens, frame = alignment_frames(source, target, links, src_name, tgt_name)
    who = [
        BOTH if (t, s) in drawn and (t, s) in gold else ATTENTION if (t, s) in drawn else PEOPLE for t, s, _ in links
    ]
    return tokens, frame.assign(**{"drawn by": who})


def agreement_chart(
    tokens: pd.DataFrame, links: pd.DataFrame, title: str, src_name: str, tgt_name: str
) -> alt.LayerChart:
    """Both alignments in one drawing: a line per link, its colour (and dash) saying who drew it."""
    who = alt.Scale(domain=list(AGREEMENT), range=list(AGREEMENT.values()))
    dashes = alt.Scale(domain=list(AGREEMENT), range=[[1, 0], [1, 0], [5, 4]])
    tooltip = [alt.Tooltip("drawn by:N"), alt.Tooltip("weight:Q", format=".3f", title="attention weight")]
    chart = _drawing(
        tokens,
        alt.Chart(links).mark_rule(strokeWidth=2.5),
        title,
        src_name,
        tgt_name,
        tooltip,
        color=alt.Color("drawn by:N", scale=who, legend=alt.Legend(title="Link drawn by", orient="bottom")),
        strokeDash=alt.StrokeDash("drawn by:N", scale=dashes, legend=None),
    )
    return chart.resolve_scale(color="independent")
