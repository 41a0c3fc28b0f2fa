"""The architecture as a diagram drawn from the model's own sizes: embeddings and positions, the encoder and decoder
stacks layer by layer, the output softmax, and the attention block whose map is on the page lit. And the positional
encoding added at the bottom, as curves: the value of a few dimensions along the positions, one line per dimension."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import altair as alt
import numpy as np
import pandas as pd

from viz.heatmap import FIT_X

WIDTH = 760  # pixels: wide enough for three sub-blocks of a decoder layer side by side
ROW_PIXELS = 50  # per row of the diagram (a layer, the embeddings, the output)
LINE = 12  # pixels per line of a label (10-px text): a sub-block is 30 px, room for its two lines
# (bottom, top) of each part inside its row, in rows: a sub-block sits low in its layer, leaving a lane above it for
# the memory's line to reach the cross-attention block without crossing the masked self-attention
SPANS = {"attention": (0.12, 0.72), "feed-forward": (0.12, 0.72), "layer": (0.04, 0.96), "io": (0.08, 0.92)}
MEMORY_LANE = 0.84  # where in a decoder layer's row the memory's line runs
ENCODER_X, DECODER_X = (0.0, 36.0), (42.0, 100.0)  # the two columns, in diagram units (0–100 across)
FILLS = {"io": "#e5f5e0", "layer": "#ffffff", "attention": "#deebf7", "feed-forward": "#f0f0f0", "lit": "#fdae6b"}


class Sizes(Protocol):
    """What the diagram reads of a model's configuration (``model.config.ModelConfig`` has it all)."""

    d_model: int
    n_heads: int
    d_ff: int
    n_encoder_layers: int
    n_decoder_layers: int
    src_vocab_size: int
    tgt_vocab_size: int
    positional: str
    share_embeddings: bool
    tie_output: bool


def _box(part: str, kind: str, layer: int, x: tuple[float, float], row: int, label: str) -> dict[str, object]:
    bottom, top = SPANS[part]
    return dict(part=part, kind=kind, layer=layer, x=x[0], x2=x[1], y=row + bottom, y2=row + top, label=label)


def _split(x: tuple[float, float], n: int) -> list[tuple[float, float]]:
    """``n`` equal sub-blocks inside the span ``x``, with a margin."""
    step = (x[1] - x[0] - 1.0) / n
    return [(x[0] + 0.5 + i * step + 0.3, x[0] + 0.5 + (i + 1) * step - 0.3) for i in range(n)]


def _layers(sizes: Sizes) -> list[dict[str, object]]:
    """Every layer of both stacks, each with its attention and feed-forward blocks."""
    d, heads = sizes.d_model, f"{sizes.n_heads} heads of {sizes.d_model // sizes.n_heads}"
    feed = f"feed-forward\n{d} → {sizes.d_ff} → {d}"
    boxes = []
    for i in range(sizes.n_encoder_layers):
        attention, forward = _split(ENCODER_X, 2)
        boxes.append(_box("layer", "encoder", i, ENCODER_X, i + 1, ""))
        boxes.append(_box("attention", "encoder", i, attention, i + 1, f"self-attention\n{heads}"))
        boxes.append(_box("feed-forward", "", i, forward, i + 1, feed))
    for i in range(sizes.n_decoder_layers):
        masked, cross, forward = _split(DECODER_X, 3)
        boxes.append(_box("layer", "decoder", i, DECODER_X, i + 1, ""))
        boxes.append(_box("attention", "decoder", i, masked, i + 1, f"masked self-attention\n{heads}"))
        boxes.append(_box("attention", "cross", i, cross, i + 1, f"cross-attention\n{heads}"))
        boxes.append(_box("feed-forward", "", i, forward, i + 1, feed))
    return boxes


def _embeddings(sizes: Sizes) -> list[dict[str, object]]:
    """The embedding row: one box under both stacks when source and target share one matrix, else one under each."""
    d, positions = sizes.d_model, f"+ {sizes.positional} positions"
    if sizes.share_embeddings:
        label = f"one embedding ({sizes.src_vocab_size} × {d}) shared by source and target tokens\n{positions}"
        return [_box("io", "embedding", -1, (ENCODER_X[0], DECODER_X[1]), 0, label)]
    return [
        _box("io", "embedding", -1, ENCODER_X, 0, f"source embedding ({sizes.src_vocab_size} × {d})\n{positions}"),
        _box("io", "embedding", -1, DECODER_X, 0, f"target embedding ({sizes.tgt_vocab_size} × {d})\n{positions}"),
    ]


def architecture_frame(sizes: Sizes, kind: str, layer: int) -> pd.DataFrame:
    """One row per box: part ("io", "layer", "attention", "feed-forward"), the attention kind it computes
    ("encoder", "decoder", "cross"; a layer box: its stack), its layer (0-based; -1 for none), corners in diagram
    units (rows from the bottom), label; ``lit`` marks the attention block of ``kind`` at ``layer`` and its layer."""
    tied = {True: "the shared embedding" if sizes.share_embeddings else "the target embedding", False: "its own"}
    output = f"linear + softmax: p(next token) over {sizes.tgt_vocab_size} tokens\nweights: {tied[sizes.tie_output]}"
    if sizes.tie_output:
        output += ", transposed"
    top_encoder, top_decoder = sizes.n_encoder_layers + 1, sizes.n_decoder_layers + 1
    frame = pd.DataFrame(
        [
            *_embeddings(sizes),
            *_layers(sizes),
            _box("io", "memory", -1, ENCODER_X, top_encoder, f"memory: one {sizes.d_model}-vector\nper source token"),
            _box("io", "", -1, DECODER_X, top_decoder, output),
        ]
    )
    stack = "encoder" if kind == "encoder" else "decoder"
    block = (frame["part"] == "attention") & (frame["kind"] == kind)
    frame["lit"] = (frame["layer"] == layer) & (block | ((frame["part"] == "layer") & (frame["kind"] == stack)))
    frame["fill"] = [
        FILLS["lit"] if lit and part != "layer" else FILLS[part]
        for lit, part in zip(frame["lit"], frame["part"], strict=True)
    ]
    return frame


def _links(frame: pd.DataFrame) -> pd.DataFrame:
    """Lines the data flows along: up each stack, and from the memory down a bus between the stacks and, in each
    decoder layer's lane above its blocks, into that layer's cross-attention block only (``arrow``: its end)."""
    rows = []
    for x in (ENCODER_X, DECODER_X):
        centre = (x[0] + x[1]) / 2
        column = frame[frame["part"].isin(["io", "layer"]) & (frame["x"] <= centre) & (frame["x2"] >= centre)]
        column = column.sort_values("y")
        spans = zip(column["y2"], column["y"].iloc[1:], strict=False)
        rows += [{"x": centre, "y": top, "x2": centre, "y2": bottom, "arrow": False} for top, bottom in spans]
    memory = frame[frame["kind"] == "memory"].iloc[0]
    bus, level = (ENCODER_X[1] + DECODER_X[0]) / 2, (memory["y"] + memory["y2"]) / 2
    crosses = frame[frame["kind"] == "cross"]
    lanes = [round(float(c["y"])) + MEMORY_LANE for _, c in crosses.iterrows()]
    rows.append({"x": memory["x2"], "y": level, "x2": bus, "y2": level, "arrow": False})
    rows.append({"x": bus, "y": level, "x2": bus, "y2": min(lanes, default=level), "arrow": False})
    for lane, (_, cross) in zip(lanes, crosses.iterrows(), strict=True):
        entry = cross["x"] + (cross["x2"] - cross["x"]) / 4
        rows.append({"x": bus, "y": lane, "x2": entry, "y2": lane, "arrow": False})
        rows.append({"x": entry, "y": lane, "x2": entry, "y2": cross["y2"], "arrow": True})  # down into the block
    return pd.DataFrame(rows, columns=["x", "y", "x2", "y2", "arrow"])


def architecture_chart(frame: pd.DataFrame, title: str, subtitle: str) -> alt.LayerChart:
    """The boxes of ``architecture_frame`` with their labels and the lines between them, on a fixed grid."""
    n_rows = round(float(frame["y2"].max()))
    across, up = alt.Scale(domain=[0, 100]), alt.Scale(domain=[0, n_rows])
    lines = _links(frame)
    links = (
        alt.Chart(lines)
        .mark_rule(color="#999999", strokeWidth=1.5)
        .encode(x=alt.X("x:Q", axis=None, scale=across), y=alt.Y("y:Q", axis=None, scale=up), x2="x2:Q", y2="y2:Q")
    )
    heads = (
        alt.Chart(lines[lines["arrow"]])
        .mark_point(shape="triangle-down", filled=True, color="#999999", size=40, opacity=1, yOffset=-3)
        .encode(x=alt.X("x2:Q", axis=None, scale=across), y=alt.Y("y2:Q", axis=None, scale=up))
    )
    boxes = (
        alt.Chart(frame)
        .mark_rect(cornerRadius=3, opacity=1)
        .encode(
            x=alt.X("x:Q", axis=None, scale=across),
            x2="x2:Q",
            y=alt.Y("y:Q", axis=None, scale=up),
            y2="y2:Q",
            color=alt.Color("fill:N", scale=None),
            stroke=alt.condition(alt.datum.lit, alt.value("#e6550d"), alt.value("#999999")),
            strokeWidth=alt.condition(alt.datum.lit, alt.value(3), alt.value(1)),
            tooltip=[alt.Tooltip("label:N", title="block")],
        )
    )
    named = frame[frame["label"] != ""].assign(cx=lambda f: (f["x"] + f["x2"]) / 2, cy=lambda f: (f["y"] + f["y2"]) / 2)
    labels = (
        alt.Chart(named)
        .mark_text(fontSize=10, lineHeight=LINE, lineBreak="\n", baseline="middle", dy=-LINE / 2)
        .encode(x=alt.X("cx:Q", axis=None, scale=across), y=alt.Y("cy:Q", axis=None, scale=up), text="label:N")
    )
    chart = alt.layer(boxes, links, labels, heads, title=alt.Title(title, subtitle=subtitle))
    return chart.properties(width=WIDTH, height=ROW_PIXELS * n_rows)


CURVES_HEIGHT = 300


def default_dimensions(d_model: int, n: int = 4) -> list[int]:
    """``n`` even (sine) dimensions from fast to slow, spread over the first quarter (the later ones barely move)."""
    if d_model < 2:
        return [0]
    picks = np.unique(np.round(np.geomspace(1, max(1, d_model // 8), n)).astype(int) - 1) * 2  # even: sines
    return [int(d) for d in picks if d < d_model]


def curves_frame(table: np.ndarray, dimensions: Sequence[int]) -> pd.DataFrame:
    """(positions, d_model) -> one row per (position, chosen dimension, value)."""
    table = np.asarray(table, dtype=np.float64)
    dims = [d for d in dict.fromkeys(dimensions) if 0 <= d < table.shape[1]]
    positions = np.arange(table.shape[0])
    return pd.DataFrame(
        {
            "position": np.tile(positions, len(dims)),
            "dimension": np.repeat([f"dim {d}" for d in dims], len(positions)),
            "value": table[:, dims].T.reshape(-1),  # (dims, positions) -> flat, dimension-major
        }
    )


MAX_POINT_MARKS = 24  # past this many positions the dots hide the wave: lines only


def positional_curves(frame: pd.DataFrame, title: str, sentence: int) -> alt.LayerChart:
    """Lines of value against position, one colour per dimension: fast waves in low dimensions, slow in high.
    ``sentence``: the number of positions this sentence uses, shaded."""
    order = list(dict.fromkeys(frame["dimension"]))
    bounded = len(frame) and float(frame["value"].abs().max()) <= 1.0  # sinusoids; a learned table may exceed ±1
    # positions start at 0: the axis too (its "nice" start was −4, a position no token has)
    x = alt.X("position:Q", title="position", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(domainMin=0))
    lines = (
        alt.Chart(frame)
        .mark_line(point=frame["position"].nunique() <= MAX_POINT_MARKS)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="value", scale=alt.Scale(domain=[-1.1, 1.1]) if bounded else alt.Undefined),
            color=alt.Color("dimension:N", sort=order, title="dimension"),
            tooltip=["dimension:N", "position:Q", alt.Tooltip("value:Q", format=".3f")],
        )
    )
    band = alt.Data(values=[{"position": 0, "end": sentence - 0.5, "what": "this sentence"}])  # inline: one mark
    shade = alt.Chart(band).mark_rect(color="#eeeeee").encode(x=x, x2="end:Q", tooltip=["what:N"])
    return alt.layer(shade, lines, title=title).properties(height=CURVES_HEIGHT, autosize=FIT_X)
