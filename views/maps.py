"""The three attention maps side by side, each with its own layer and head, and the all-heads grid: the Streamlit
wiring (pickers, clicks, the cached spec) of the maps that ``lab/attention/map_views.py`` computes and charts."""

from __future__ import annotations

import hashlib
from functools import partial

import altair as alt
import numpy as np
import pyarrow as pa
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.case_markup import MARK
from data.languages import with_article
from lab.attention.map_views import (
    Followed,
    describe,
    focus,
    grid_chart,
    grid_plan,
    map_chart,
    map_view,
    options,
    token_at,
    too_big,
    which,
)
from lab.attention.sentence_maps import KIND_TITLES, KINDS, Kind, SentenceMaps
from lab.page.direction import Languages
from lab.page.labels import captions, how_to_read, legend_markdown
from views.tab_context import Display, TabContext
from viz.heatmap import CELL_SELECTION, PANEL_SELECTION, clickable

LAYER_KEYS: dict[Kind, str] = {"encoder": "enc_layer", "decoder": "dec_layer", "cross": "cross_layer"}
# cross-attention's head keeps the key of the page's former single head: the head the other tabs follow
HEAD_KEYS: dict[Kind, str] = {"encoder": "enc_head", "decoder": "dec_head", "cross": "head"}
# The page's side margins at 2 rem, not Streamlit's 5: the 96 pixels let three maps stand side by side beside the
# sidebar on a 1280-px screen, each with 180 px of cells; its top margin at 3 rem, not 6, just under the header's
# menu: the maps start 48 px higher on an 800-px screen (a style alone takes no room on the page).
ROOM_FOR_MAPS = "<style>.stMainBlockContainer { padding-top: 3rem; padding-left: 2rem; padding-right: 2rem; }</style>"
FOLLOW = "follow"  # the followed token: a cell of a map clicked, or a word of the translation
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


def follow_picker(maps: SentenceMaps, langs: Languages) -> Followed | None:
    """Pick a token (or click a row of a map) to light its rows and columns in every view."""
    sentence = (tuple(maps.src), tuple(maps.tgt_out))
    token = st.session_state.get(FOLLOW)
    if st.session_state.get("follow_sentence") != sentence or (token is not None and token not in options(maps)):
        st.session_state[FOLLOW] = None  # a token of another sentence: follow nothing
        st.session_state["follow_sentence"] = sentence
    return st.selectbox(
        "Follow a token",
        [None, *options(maps)],
        key=FOLLOW,
        placeholder="nothing (click a row of a map)",  # None in the session reads as no choice: say what it means
        format_func=lambda t: (
            "nothing (click a row of a map)" if t is None else describe(maps, t, langs.src, langs.tgt)
        ),
        help="Lights the token's row (where it is the query) and column (where it is a key) in every view it is in, "
        f"and in the all-heads grid; the rest is dimmed. A token of the {langs.src} sentence is in the encoder map "
        f"and the columns of cross-attention, one of the {langs.tgt} in masked self-attention and the rows of "
        "cross-attention. Clicking a cell of a map follows that row's token.",
    )


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


def show_legend(maps: SentenceMaps, langs: Languages) -> None:
    """What the special pieces mean; the case mark's line only when this sentence has one."""
    case_mark = MARK in maps.src
    with st.expander(f"Reading the tokens: ▁, <s>, </s>, <unk>{', ' + MARK if case_mark else ''}"):
        st.markdown(legend_markdown(case_mark, langs.src_code))


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
    choice = (display.layers[kind], display.heads[kind], display.words, display.followed)
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
    words: bool,
    followed: Followed | None,
    langs: Languages,
    shared: bool,
) -> dict:
    """One kind's clickable map as sent to the browser, built once per result and what it shows: a rerun that shows
    it again (another map's layer changed, another tab opened) sends it without building it again."""
    lit = focus(maps, kind, followed, words)
    chart = map_chart(
        map_view(maps, kind, words), layer, head, KIND_TITLES[kind], which(layer, head), langs, lit, shared
    )
    return arrow_spec(clickable(chart, CELL_SELECTION, ["row", "col"]))


def arrow_spec(chart: alt.Chart | alt.LayerChart) -> dict:
    """``chart`` as the Vega-Lite spec ``st.altair_chart`` sends, for ``st.vega_lite_chart``: its one data frame as an
    Arrow dataset (Streamlit passes such bytes on untouched), no Altair theme (Streamlit's own look)."""
    table = pa.Table.from_pandas(chart.data, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    name = f"data-{hashlib.blake2b(data, digest_size=16).hexdigest()}"
    spec = inline_spec(chart.properties(data=alt.NamedData(name=name)))  # a layer's own data would be inline here
    assert not spec["datasets"], "a map's layers share its one data frame"
    spec["datasets"] = {name: data}
    return spec


def inline_spec(chart: alt.Chart | alt.LayerChart) -> dict:
    """``chart`` as a Vega-Lite spec for ``st.vega_lite_chart``, its data frames inline (a chart of several small
    frames; a map's one frame goes as Arrow, ``arrow_spec``), no Altair theme: built once, in a cache, instead of
    ``st.altair_chart`` converting and validating it on every rerun."""
    datasets: dict[str, object] = {}
    spec = chart.to_dict(context={"top_level": False, "datasets": datasets})
    spec["datasets"] = datasets
    return spec


def picked(event: object, name: str) -> dict | None:
    """The first point of selection ``name`` in a Streamlit chart event (or its session-state value), else None."""
    selection = getattr(event, "selection", None)
    if selection is None and isinstance(event, dict):
        selection = event.get("selection")
    if selection is None:
        return None
    points = selection.get(name) if isinstance(selection, dict) else getattr(selection, name, None)
    return dict(points[0]) if points else None


def cell_clicked(maps: SentenceMaps, kind: Kind, words: bool) -> None:
    """A click on a map cell follows the token of its row."""
    point = picked(st.session_state.get(f"map_{kind}"), CELL_SELECTION)
    if point and "row" in point:
        st.session_state[FOLLOW] = token_at(maps, kind, int(point["row"]), words)


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
    lit = focus(maps, kind, display.followed, display.words)
    grid = grid_chart(view, plan.layers, f"{KIND_TITLES[kind]}: all heads", langs, lit, shared_scale())
    st.altair_chart(
        clickable(grid, PANEL_SELECTION, ["layer", "head"]),
        key="grid",
        width="content",
        on_select=partial(panel_clicked, kind),
        selection_mode=PANEL_SELECTION,
    )
