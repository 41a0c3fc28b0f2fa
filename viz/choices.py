"""Step-by-step decoding (``lab.attention.step_choices``): the most probable next tokens at one step, the chosen one
highlighted; beam search as a tree, every hypothesis the search held, step by step, the pruned ones grey, the chosen
path lit."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X, unique_labels

CHOSEN_COLOUR = "#f58518"
PROBABILITY_TICKS = [0.0, 0.5, 1.0]  # a 0–1 axis needs few ticks: 21 crowd a narrow column
OTHER_COLOUR = "#9ecae9"
PALETTE = ("#f58518", "#4c78a8", "#bab0ac", "#54a24b")  # chosen path, kept, pruned, ended (in ``fates`` order)
ROW_HEIGHT = 22  # pixels per leaf of the tree


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


def _leaf_order(parents: Mapping[str, str | None]) -> dict[str, float]:
    """A tidy layout: leaves take 0, 1, 2… in depth-first order (children best first), a parent the middle of its
    children; so no two branches cross."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for node, parent in parents.items():  # rows come best first within a step: children stay in that order
        children[parent].append(node)
    position: dict[str, float] = {}
    leaves = 0
    stack = [(root, False) for root in reversed(children[None])]
    while stack:  # iterative post-order: a long sentence is deeper than Python's recursion limit allows
        node, done = stack.pop()
        kids = children.get(node, [])
        if not kids:
            position[node], leaves = float(leaves), leaves + 1
        elif done:
            position[node] = (position[kids[0]] + position[kids[-1]]) / 2
        else:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
    return position


def tree_frame(rows: Sequence[Mapping[str, object]]) -> pd.DataFrame:
    """Rows of (node, parent, step, token, hypothesis, log_prob, fate) -> the same with a layout: ``y`` for every
    node and (``parent_step``, ``parent_y``) for the edge into it."""
    frame = pd.DataFrame(list(rows), columns=["node", "parent", "step", "token", "hypothesis", "log_prob", "fate"])
    # ``ended`` and other extra keys are dropped: only what the chart draws goes to the browser
    parents = [None if pd.isna(p) else str(p) for p in frame["parent"]]  # the root's parent: None (NaN in pandas)
    orphans = sorted(set(parents) - set(frame["node"]) - {None})
    if orphans:
        raise ValueError(f"a node's parent is not in the tree: {orphans[0]!r}")
    y = _leaf_order(dict(zip(frame["node"], parents, strict=True)))
    step = dict(zip(frame["node"], frame["step"], strict=True))
    frame["y"] = frame["node"].map(y)
    frame["parent_step"] = [step.get(p) for p in parents]
    frame["parent_y"] = [y.get(p) for p in parents]
    return frame


def beam_tree_chart(frame: pd.DataFrame, title: str, fates: Sequence[str], current: int) -> alt.LayerChart:
    """Nodes at (step, leaf order) joined to their parents, coloured by fate (``fates``: the chosen path's name
    first, then kept, pruned, ended); ``current`` (a step) marked by a band."""
    colour = alt.Color(
        "fate:N",
        scale=alt.Scale(domain=list(fates), range=list(PALETTE[: len(fates)])),
        legend=alt.Legend(orient="top", title=None),
    )
    axis, rows = alt.Axis(tickMinStep=1, format="d", grid=False), alt.Scale(reverse=True, padding=ROW_HEIGHT / 2)
    x = alt.X("step:Q", title="step (output token)", axis=axis)
    y = alt.Y("y:Q", axis=None, scale=rows)
    tooltip = [
        alt.Tooltip("hypothesis:N"),
        alt.Tooltip("log_prob:Q", title="log-probability", format=".3f"),
        alt.Tooltip("fate:N"),
    ]
    edges = (
        alt.Chart(frame[frame["parent"].notna()])
        .mark_rule()
        .encode(
            x=alt.X("parent_step:Q", title="step (output token)", axis=axis),
            y=alt.Y("parent_y:Q", axis=None, scale=rows),
            x2="step:Q",
            y2="y:Q",
            color=colour,
            strokeWidth=alt.condition(alt.datum.fate == fates[0], alt.value(3), alt.value(1)),
        )
    )
    nodes = alt.Chart(frame).mark_circle(size=50, opacity=1).encode(x=x, y=y, color=colour, tooltip=tooltip)
    labels = (
        alt.Chart(frame)
        .mark_text(align="left", baseline="bottom", dx=3, dy=-4, fontSize=11)
        .encode(x=x, y=y, text="token:N", color=colour, tooltip=tooltip)
    )
    marker = alt.Chart(pd.DataFrame({"step": [current]})).mark_rule(color="#dddddd", strokeWidth=12).encode(x=x)
    leaves = int(frame["y"].max()) + 1 if len(frame) else 1
    return alt.layer(marker, edges, nodes, labels, title=title).properties(
        height=max(120, ROW_HEIGHT * leaves), autosize=FIT_X
    )
