"""The three attention maps side by side, each with its own layer and head, and the all-heads grid."""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.languages import with_article
from lab.attention.map_views import grid_plan, map_view, too_big
from lab.attention.sentence_maps import KIND_TITLES, KINDS, Kind, SentenceMaps, pick
from lab.attention.token_focus import Followed, focus
from lab.page.direction import Languages
from lab.page.labels import captions, how_to_read, short_axis_titles
from views.map_chart import arrow_spec, cell_clicked, clickable_cells, grid_aids, heatmap
from views.reading_aids import follow_picker, show_legend
from views.tab_context import Display, TabContext
from viz.focus import CELL_SELECTION, PANEL_SELECTION, focus_frame, picked
from viz.heatmap import attention_frame, heads_grid

LAYER_KEYS: dict[Kind, str] = {"encoder": "enc_layer", "decoder": "dec_layer", "cross": "cross_layer"}
# cross-attention's head keeps the key of the page's former single head: the head the other tabs follow
HEAD_KEYS: dict[Kind, str] = {"encoder": "enc_head", "decoder": "dec_head", "cross": "head"}
# The page's side margins at 2 rem, not Streamlit's 5: the 96 pixels let three maps stand side by side beside the
# sidebar on a 1280-px screen, each with 180 px of cells (a style alone takes no room on the page).
ROOM_FOR_MAPS = "<style>.stMainBlockContainer { padding-left: 2rem; padding-right: 2rem; }</style>"
DISCLAIMER = "Attention shows where the model looked — one window into it, not an explanation of why it chose a word."


def map_choice(column: DeltaGenerator, maps: SentenceMaps, kind: Kind) -> tuple[int, int | None]:
    """(layer, head or None for the mean) of one kind, chosen above its map; the last layer and the mean at first."""
    n_layers = maps.n_layers(kind)
    layer_box, head_box = column.columns([2, 3])  # room for "mean of heads"
    # The last layer at first: set in Session State, never also as the widget's default (a hint or a click on the
    # all-heads grid sets the layer there too, and Streamlit warns of a widget given both).
    if st.session_state.get(LAYER_KEYS[kind]) not in range(n_layers):
        st.session_state[LAYER_KEYS[kind]] = n_layers - 1
    layer = layer_box.selectbox(
        f"{KIND_TITLES[kind]}: layer",
        range(n_layers),
        format_func=lambda i: f"layer {i + 1}",
        key=LAYER_KEYS[kind],
        label_visibility="collapsed",  # the options say "layer 2", "head 3": no label row above the map
    )
    head = head_box.selectbox(
        f"{KIND_TITLES[kind]}: head",
        range(-1, maps.n_heads),
        key=HEAD_KEYS[kind],
        format_func=lambda h: "mean of heads" if h < 0 else f"head {h + 1}",
        label_visibility="collapsed",
    )
    return layer or 0, None if head is None or head < 0 else head


def reading_controls(maps: SentenceMaps, langs: Languages) -> tuple[bool, Followed | None]:
    """(word level, followed token), chosen below the maps; the colour scale toggle beside them."""
    follow, words, scale = st.columns([2, 1, 1], vertical_alignment="center")
    with follow:
        followed = follow_picker(maps, langs)
    on = words.toggle(
        "Whole words",
        key="words",
        help=f"Sum over the subwords of {with_article(langs.src)} word (columns), average over "
        f"the subwords of {with_article(langs.tgt)} word (rows): rows still sum to 1.",
    )
    scale.toggle(
        "Same 0–1 colour scale",
        value=True,
        key="shared_scale",
        help="On: one colour is one weight in every view, so the maps side by side compare. Off: each map spreads "
        "its colours over its own weights and prints its largest weight (faint patterns show, but the same shade "
        "means different weights).",
    )
    return on, followed


def shared_scale() -> bool:
    return bool(st.session_state.get("shared_scale", True))


def show_maps(maps: SentenceMaps, langs: Languages) -> tuple[Display, DeltaGenerator]:
    """The three kinds of attention side by side where they fit, each under its layer and head; below them the word,
    scale and follow controls, the token legend and the one disclaimer. Returns what is shown and an empty
    place right under the maps (for what to look for in them)."""
    st.caption(how_to_read(langs))
    with st.container(key="views"):  # three maps side by side, on a 1280-px screen too: the cells shrink to fit
        columns = st.columns(len(KINDS), gap="xsmall")
    under = st.container()
    chosen = {kind: map_choice(column, maps, kind) for column, kind in zip(columns, KINDS, strict=True)}
    words, followed = reading_controls(maps, langs)
    show_legend(maps, langs)
    st.caption(DISCLAIMER)
    display = Display({k: c[0] for k, c in chosen.items()}, {k: c[1] for k, c in chosen.items()}, words, followed)
    for column, kind in zip(columns, KINDS, strict=True):
        with column:
            draw_map(maps, kind, display, langs)
            st.caption(captions(langs, words)[kind])  # below the map, so that the three titles line up
    return display, under


def draw_map(maps: SentenceMaps, kind: Kind, display: Display, langs: Languages) -> None:
    """One kind's map at its layer and head, clickable; why not, when it is too big to draw."""
    view = map_view(maps, kind, display.words)
    if too_big(view):
        st.info(too_big(view))
        return
    choice = (display.layers[kind], display.heads[kind], display.which(kind), display.words, display.followed)
    spec = map_spec(maps, kind, *choice, langs, shared_scale())
    st.vega_lite_chart(
        spec,
        key=f"map_{kind}",
        width="stretch",
        on_select=partial(cell_clicked, maps, kind, display.words),
        selection_mode=CELL_SELECTION,
    )


def maps_digest(maps: SentenceMaps) -> str:
    """What tells one sentence's maps from another's for a cache: their tokens and weights."""
    digest = hashlib.blake2b(repr((maps.src, maps.tgt_in, maps.tgt_out)).encode())
    for weights in (maps.encoder, maps.decoder, maps.cross):
        digest.update(np.ascontiguousarray(weights).data)
    return digest.hexdigest()


@st.cache_data(show_spinner=False, max_entries=64, hash_funcs={SentenceMaps: maps_digest})
def map_spec(
    maps: SentenceMaps,
    kind: Kind,
    layer: int,
    head: int | None,
    subtitle: str,
    words: bool,
    followed: Followed | None,
    langs: Languages,
    shared: bool,
) -> dict:
    """One kind's clickable map as sent to the browser, built once per result and what it shows: a rerun that shows
    it again (another map's layer changed, another tab opened) sends it without building it again."""
    view = map_view(maps, kind, words)
    weights = pick(view.weights, layer, head)
    chart = heatmap(view, weights, KIND_TITLES[kind], subtitle, langs, focus(maps, kind, followed, words), shared)
    return arrow_spec(clickable_cells(chart))


def panel_clicked(kind: Kind) -> None:
    """A click on a panel of the all-heads grid shows that layer and head in its own kind's map, and only there."""
    point = picked(st.session_state.get("grid"), PANEL_SELECTION)
    if point and {"layer", "head"} <= set(point):
        st.session_state[LAYER_KEYS[kind]] = int(point["layer"]) - 1
        st.session_state[HEAD_KEYS[kind]] = int(point["head"]) - 1


def show_all_heads(ctx: TabContext) -> None:
    maps, display, langs = ctx.maps, ctx.display, ctx.langs
    kind = st.radio("Kind", KINDS, format_func=KIND_TITLES.get, horizontal=True, key="grid_kind")
    st.caption(
        "Every layer (rows of panels) and head (columns of panels) at once: heads of one layer often "
        "specialise in different patterns. Click a panel to show that layer and head in the map of its kind above."
    )
    view = map_view(maps, kind, display.words)
    plan = grid_plan(view, display.layers[kind])
    if plan.note:
        st.info(plan.note)
    if not plan.layers:
        return
    frame = attention_frame(
        view.weights[plan.layers], view.row_labels, view.cols, view.future, view.inputs, first_layer=plan.layers[0] + 1
    )
    lit = focus(maps, kind, display.followed, display.words)
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
