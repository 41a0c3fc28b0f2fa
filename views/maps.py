"""The three attention maps side by side with their layer, head and word controls, and the all-heads grid."""

from __future__ import annotations

from functools import partial

import altair as alt
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.languages import with_article
from lab.attention.map_views import grid_plan, map_view, too_big
from lab.attention.sentence_maps import KIND_TITLES, KINDS, SentenceMaps, pick
from lab.attention.token_focus import Followed, focus
from lab.page.direction import Languages
from lab.page.labels import captions, short_axis_titles
from views.map_chart import cell_clicked, clickable_cells, grid_aids, heatmap, panel_clicked
from viz.focus import CELL_SELECTION, PANEL_SELECTION, focus_frame
from viz.heatmap import attention_frame, heads_grid


def layer_select(column: DeltaGenerator, label: str, n_layers: int, key: str) -> int | None:
    """A layer chooser (1-based labels), starting at the last layer."""
    return column.selectbox(label, range(n_layers), index=n_layers - 1, format_func=lambda i: f"layer {i + 1}", key=key)


def display_controls(maps: SentenceMaps, langs: Languages) -> tuple[int, int, int | None, bool]:
    """(encoder layer, decoder layer, head or None for the mean, word level) — never a hard-coded layer."""
    a, b, c, d, e = st.columns(5)
    enc = layer_select(a, "Encoder layer", maps.n_layers("encoder"), "enc_layer")
    dec = layer_select(b, "Decoder layer", maps.n_layers("cross"), "dec_layer")
    head = c.selectbox(
        "Head", range(-1, maps.n_heads), key="head", format_func=lambda h: "mean of heads" if h < 0 else f"head {h + 1}"
    )
    words = d.toggle(
        "Whole words",
        key="words",
        help=f"Sum over the subwords of {with_article(langs.src)} word (columns), average over "
        f"the subwords of {with_article(langs.tgt)} word (rows): rows still sum to 1.",
    )
    e.toggle(
        "Same 0–1 colour scale",
        value=True,
        key="shared_scale",
        help="On: one colour is one weight in every view, so the maps side by side compare. Off: each map spreads "
        "its colours over its own weights (faint patterns show, but the same shade means different weights).",
    )
    return enc or 0, dec or 0, None if head is None or head < 0 else head, words


def shared_scale() -> bool:
    return bool(st.session_state.get("shared_scale", True))


def show_views(
    maps: SentenceMaps, enc: int, dec: int, head: int | None, words: bool, langs: Languages, followed: Followed | None
) -> list[alt.Chart]:
    """The three kinds of attention side by side; returns the charts drawn (for download)."""
    charts = []
    which = "mean of heads" if head is None else f"head {head + 1}"
    with st.container(key="views"):
        for column, kind in zip(st.columns(3), KINDS, strict=True):
            with column:
                view = map_view(maps, kind, words)
                if too_big(view):
                    st.info(too_big(view))
                else:
                    layer = enc if kind == "encoder" else dec
                    lit = focus(maps, kind, followed, words)
                    weights, subtitle = pick(view.weights, layer, head), f"layer {layer + 1}, {which}"
                    chart = heatmap(view, weights, KIND_TITLES[kind], subtitle, langs, lit, shared_scale())
                    charts.append(chart)
                    st.altair_chart(
                        clickable_cells(chart),
                        key=f"map_{kind}",
                        width="stretch",
                        on_select=partial(cell_clicked, maps, kind, words),
                        selection_mode=CELL_SELECTION,
                    )
                st.caption(captions(langs)[kind])  # below the map, so that the three titles line up
    st.caption(
        "Attention shows where the model looked — one window into it, not an explanation of why it chose a word."
    )
    return charts


def show_all_heads(
    maps: SentenceMaps, enc: int, dec: int, words: bool, langs: Languages, followed: Followed | None
) -> None:
    kind = st.radio("Kind", KINDS, format_func=KIND_TITLES.get, horizontal=True, key="grid_kind")
    st.caption(
        "Every layer (rows of panels) and head (columns of panels) at once: heads of one layer often "
        "specialise in different patterns. Click a panel to show that layer and head above."
    )
    view = map_view(maps, kind, words)
    plan = grid_plan(view, enc if kind == "encoder" else dec)
    if plan.note:
        st.info(plan.note)
    if not plan.layers:
        return
    frame = attention_frame(
        view.weights[plan.layers], view.rows, view.cols, view.future, view.inputs, first_layer=plan.layers[0] + 1
    )
    lit = focus(maps, kind, followed, words)
    if lit.rows or lit.cols:
        frame = focus_frame(frame, lit.rows, lit.cols)
    grid = heads_grid(frame, f"{KIND_TITLES[kind]}: all heads", *short_axis_titles(kind, langs))
    st.altair_chart(
        grid_aids(grid, shared_scale()),
        key="grid",
        width="content",
        on_select=partial(panel_clicked, kind),
        selection_mode=PANEL_SELECTION,
    )
