"""Compare two models: the model picked in the sidebar (A) and another of its direction (B) on the sentence shown,
both translations, then for one kind of attention A's map, B's map of the same tokens and B − A, and how far apart
each layer is (``lab.attention.translate_with_maps``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from lab.attention.map_views import axis_titles, map_chart, too_big, which
from lab.attention.sentence_maps import KIND_TITLES, KINDS, Kind, pick
from lab.attention.translate_with_maps import compare
from lab.page.direction import languages
from lab.page.model_choices import KEPT_MODEL
from translate.translator import DecodeOptions
from views.tab_context import TabContext
from viz.heatmap import attention_frame, difference_heatmap

COMPARE_VIEW = "Compare two models"  # the tab's title, opened by the Train page's "Compare with the default"
MODEL_B = "compare_b"  # model B's folder; the Train page's result sets it to its run
ASKED = "compare_asked"  # set by ``ask``: the Translate page opens this tab on its next run
TRANSLATE_PAGE = "translate_page"  # the Translate page (st.Page), kept by app.py for ``ask`` to switch to


def ask(a: Path, b: Path) -> None:
    """The Train page's "Compare with the default": the Translate page with model A picked and the tab open on B
    (the sentence in the box, or the first guided example)."""
    st.session_state.pop("model", None)
    st.session_state.update({ASKED: True, KEPT_MODEL: str(a), MODEL_B: str(b)})
    st.switch_page(st.session_state[TRANSLATE_PAGE])


def show_compare(ctx: TabContext) -> None:
    request, candidate, display, langs = ctx.request, ctx.candidate, ctx.display, ctx.langs
    same_way = {
        str(c.path): c.label for c in ctx.models() if c.available and not c.refused and languages(c.path) == langs
    }
    if st.session_state.get(MODEL_B) not in same_way:  # at first, and after the model or its direction changed
        st.session_state[MODEL_B] = next((p for p in same_way if p != request.model), request.model)
    st.caption(
        f"A is the model picked in the sidebar ({request.model_label}); pick B among the models that translate "
        f"{langs.src} → {langs.tgt}: a finished run, a stopped run's best checkpoint, or A itself (then B − A is 0 "
        "everywhere). B reads A's source and A's translation (one forced pass), so each cell is the same pair of "
        "tokens in both maps."
    )
    picked = st.selectbox("Model B", list(same_way), key=MODEL_B, format_func=same_way.get)
    other = ctx.load(picked)
    options = DecodeOptions(request.beam_size, request.length_penalty, name_guard=request.name_guard, marks=True)
    own = other.translate(ctx.sentence.source, options).text
    a_side, b_side = st.columns(2)
    a_side.markdown(f"**A** · {request.model_label}")
    a_side.write(candidate.text)
    b_side.markdown(f"**B** · {same_way[picked]}")
    b_side.write(own)
    if own != candidate.text:
        b_side.caption("B translates it otherwise: its maps below are of A's translation, forced, not of its own.")
    comparison = compare(ctx.translator, other, ctx.maps, ctx.sentence.src_ids, candidate.tokens)
    if comparison.b is None:
        st.info(f"No difference map: {comparison.why_not}.")
        return
    kind = st.radio("Kind", KINDS, index=2, format_func=KIND_TITLES.get, horizontal=True, key="compare_kind")
    a_view, b_view, change = comparison.views(kind, display.words)
    if too_big(a_view):
        st.info(too_big(a_view))
        return
    layer, head = display.layers[kind], display.heads[kind]
    columns = st.columns(3, gap="xsmall")
    for column, name, view in zip(columns, "AB", (a_view, b_view), strict=False):
        chart = map_chart(view, layer, head, f"{name}: {KIND_TITLES[kind]}", which(layer, head), langs)
        column.altair_chart(chart, width="stretch")
    frame = attention_frame(pick(change.weights, layer, head), change.row_labels, change.cols, change.future)
    columns[2].altair_chart(
        difference_heatmap(frame, "B − A", *axis_titles(kind, langs), which(layer, head)), width="stretch"
    )
    st.caption(
        "The layer and head are those chosen above the maps. Blue: B puts more weight there than A; red: less. "
        "A difference says the two models attend otherwise, not why they translate otherwise (attention is not "
        "explanation)."
    )
    show_layer_changes(comparison.layer_changes())


def show_layer_changes(changes: dict[Kind, list[float]]) -> None:
    """How far B is from A, one row per kind, one column per layer."""
    depth = max(len(v) for v in changes.values())
    table = pd.DataFrame(
        [[f"{d:.3f}" for d in v] + ["–"] * (depth - len(v)) for v in changes.values()],
        index=[KIND_TITLES[k] for k in changes],
        columns=[f"layer {i + 1}" for i in range(depth)],
    )
    st.markdown("**How far apart, layer by layer** (0: the same weights; 1: no key in common)")
    st.dataframe(table, width="content")
    st.caption("The mean over heads and rows of the total variation distance ½ Σ |B − A| between a row of each.")
