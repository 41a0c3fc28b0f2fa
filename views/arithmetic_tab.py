"""The arithmetic tab: how one row of a map is computed, q·k/√d_head for every key, the mask, the softmax; then\nwhat the head makes of it (views/after_softmax.py)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from lab.attention.head_contribution import RowAt
from lab.attention.map_views import axis_titles
from lab.attention.sentence_maps import KIND_TITLES, KINDS
from lab.attention.weight_arithmetic import FORMULA, STABLE_NOTE, weight_arithmetic, why_zero, worked_example
from views.after_softmax import show_after_softmax
from views.tab_context import TabContext
from viz.arithmetic import arithmetic_frame, score_chart, weight_bars, weight_text


def shown_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as printed: weights and e^(s − max s) with enough digits that none below 1 reads as 1."""
    table = frame.drop(columns=["label", "masked"])
    for column in ("e^(s − max s)", "weight"):
        table[column] = [weight_text(v) for v in table[column]]
    return table


def show_arithmetic(ctx: TabContext) -> None:
    translator, maps, head, layers, langs = ctx.translator, ctx.maps, ctx.cross_head, ctx.display.layers, ctx.langs
    st.caption(
        "How one row of a map is computed, for one query token, layer and head: the score of every key is the dot "
        "product of the query vector q with the key vector k, divided by √d_head; masked keys get −∞; a softmax "
        "turns the scores into weights that sum to 1. Subword level: this is what the model computes."
    )
    st.latex(FORMULA)
    a, b, c, d = st.columns(4)
    kind = a.selectbox("Kind", KINDS, format_func=KIND_TITLES.get, key="arith_kind")
    layer = b.selectbox(
        "Layer",
        range(maps.n_layers(kind)),
        index=min(layers["encoder" if kind == "encoder" else "cross"], maps.n_layers(kind) - 1),
        format_func=lambda i: f"layer {i + 1}",
        key=f"arith_layer_{kind}",
    )
    chosen_head = c.selectbox(
        "Head", range(maps.n_heads), index=head or 0, format_func=lambda h: f"head {h + 1}", key="arith_head"
    )
    rows = maps.labels(kind)[0]
    query = d.selectbox(
        "Query (row)", range(len(rows)), format_func=lambda i: f"{i + 1}: {rows[i]}", key=f"arith_query_{kind}"
    )
    if head is None:
        st.caption("The views above show the mean of heads: each head computes its own row this way; they average.")
    result = weight_arithmetic(
        translator.model, translator.tokenizer, maps, kind, layer or 0, chosen_head or 0, query or 0
    )
    where = f"layer {result.layer + 1}, head {result.head + 1}"
    if result.predicts is None:
        st.markdown(f"**Query**: `{result.query_token}` — {where}, d_head = {result.d_head}")
    else:
        st.markdown(
            f"**Query** computed at the {langs.tgt} input `{result.query_token}`, predicting `{result.predicts}` — "
            f"{where}, d_head = {result.d_head}"
        )
    row = result.row
    frame = arithmetic_frame(result.keys, row.dots, row.scores, row.allowed, row.exps, row.weights)
    key_title = axis_titles(kind, langs)[1]
    left, right = st.columns(2)
    left.altair_chart(score_chart(frame, "1. Scores q·k/√d_head (masked: −∞)", key_title), key="arith_scores")
    right.altair_chart(weight_bars(frame, "2. Softmax: the weights", key_title), key="arith_weights")
    st.caption("The key with the largest weight, worked out:")
    st.latex(worked_example(result))
    with st.container(key="arith_table"):
        st.dataframe(shown_table(frame), hide_index=True, height="content")  # one table, never a scroll inside it
    st.caption(
        f"Same as row {result.query + 1} of the map ({where}): largest difference {result.max_difference:.1e} "
        f"(float rounding). Σ weights = {row.weights.sum():.6f}. {STABLE_NOTE}"
    )
    note = why_zero(result)
    if note:
        with st.container(key="why_zero"):
            st.info(note)
    show_after_softmax(translator, maps, RowAt(result.kind, result.layer, result.head, result.query))
