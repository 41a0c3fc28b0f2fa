"""The head summary tab: what each head does (entropy and positional pattern), and the map of the one picked."""

from __future__ import annotations

import streamlit as st

from lab.attention.head_patterns import CROSS_PATTERNS, PATTERNS, summarize
from lab.attention.map_views import map_view, too_big
from lab.attention.sentence_maps import KIND_TITLES, KINDS, SentenceMaps
from lab.page.direction import Languages
from views.map_chart import heatmap
from views.maps import shared_scale
from viz.heads import HEAD_SELECTION, heads_chart, heads_frame


def head_clicked() -> None:
    """A click on the head summary chart chooses that head in the "Show head" box (1-based in the chart)."""
    picked = st.session_state["summary_chart"].selection.get(HEAD_SELECTION) or []
    if picked and {"layer", "head"} <= set(picked[0]):
        st.session_state["summary_head"] = (int(picked[0]["layer"]) - 1, int(picked[0]["head"]) - 1)


def show_head_summary(maps: SentenceMaps, words: bool, langs: Languages) -> None:
    kind = st.radio("Kind", KINDS, format_func=KIND_TITLES.get, horizontal=True, key="summary_kind")
    patterns = ", ".join(CROSS_PATTERNS if kind == "cross" else PATTERNS)  # cross-attention keys are source tokens
    st.caption(
        "Entropy (bits, mean over rows): low = the head looks at one token, high = it spreads out. The label names "
        f"the position most rows look at most ({patterns}), else 'content' (sharp but word-dependent) or 'broad'. "
        "Click a cell to show that head."
    )
    view = map_view(maps, kind, words)
    summaries = summarize(view.weights, view.future, cross=kind == "cross")
    frame = heads_frame([(h.layer, h.head, h.entropy, h.label, h.share) for h in summaries])
    st.altair_chart(
        heads_chart(frame, f"{KIND_TITLES[kind]}: what each head does"),
        key="summary_chart",
        on_select=head_clicked,
        selection_mode=HEAD_SELECTION,
        width="stretch",
    )
    pairs = [(h.layer, h.head) for h in summaries]
    chosen = st.selectbox(
        "Show head", pairs, key="summary_head", format_func=lambda p: f"layer {p[0] + 1}, head {p[1] + 1}"
    )
    layer, head = chosen or pairs[0]
    if too_big(view):
        st.info(too_big(view))
        return
    subtitle = f"layer {layer + 1}, head {head + 1}"
    chart = heatmap(view, view.weights[layer, head], KIND_TITLES[kind], subtitle, langs, None, shared_scale())
    st.altair_chart(chart, key="summary_map", width="stretch")
