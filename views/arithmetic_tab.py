"""The arithmetic tab: how one row of a map is computed, q·k/√d_head for every key, the mask, the softmax; then what
the head makes of it past the softmax: values, weighted sum, the head's W_O slice, the way to the logit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from lab.attention.head_contribution import HeadContribution, LogitPath, RowAt, contribution_of_row
from lab.attention.map_views import axis_titles
from lab.attention.sentence_maps import KIND_TITLES, KINDS, SentenceMaps
from lab.attention.weight_arithmetic import FORMULA, STABLE_NOTE, weight_arithmetic, why_zero, worked_example
from translate.translator import Translator
from views.tab_context import TabContext
from viz import arithmetic as charts
from viz.heatmap import DIVERGING_KEY

MAX_COMPONENTS = 128  # components of a value vector drawn (the shipped model's d_head is 64)
CONTEXT_FORMULA = r"c_i = \sum_j \alpha_{ij}\, v_j, \qquad v_j = W_V^{(h)} x_j + b_V^{(h)}"
OUTPUT_FORMULA = (
    r"\text{out}_i = W_O \begin{bmatrix} c_i^{(1)} \\ \vdots \\ c_i^{(H)} \end{bmatrix} + b_O"
    r" = \sum_h \underbrace{W_O^{(h)} c_i^{(h)}}_{\text{head } h\text{'s contribution}} + b_O"
)
NOT_ONE_VECTOR = "—"  # the other keys together have no one ‖v‖: a dash, never "None"


def shown_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as printed: weights and e^(s − max s) with enough digits that none below 1 reads as 1."""
    table = frame.drop(columns=["label", "masked"])
    for column in ("e^(s − max s)", "weight"):
        table[column] = [charts.weight_text(v) for v in table[column]]
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
    frame = charts.arithmetic_frame(result.keys, row.dots, row.scores, row.allowed, row.exps, row.weights)
    key_title = axis_titles(kind, langs)[1]
    left, right = st.columns(2)
    left.altair_chart(charts.score_chart(frame, "1. Scores q·k/√d_head (masked: −∞)", key_title), key="arith_scores")
    right.altair_chart(charts.weight_bars(frame, "2. Softmax: the weights", key_title), key="arith_weights")
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


def value_table(result: HeadContribution) -> pd.DataFrame:
    """The keys shown one by one, then the others together: weight α, ‖v‖, ‖α·v‖, as text with 4 decimals."""
    rows = [
        {
            "key": result.keys[j],
            "weight α": charts.weight_text(result.weights[j]),
            "‖v‖": f"{np.linalg.norm(result.values[j]):.4f}",
            "‖α·v‖": f"{result.weights[j] * np.linalg.norm(result.values[j]):.4f}",
        }
        for j in result.top
    ]
    if len(result.rest):
        rows.append(
            {
                "key": f"the other {len(result.rest)} keys",
                "weight α": charts.weight_text(result.weights[result.rest].sum()),
                "‖v‖": NOT_ONE_VECTOR,
                "‖α·v‖": f"{np.linalg.norm(result.rest_sum):.4f}",
            }
        )
    return pd.DataFrame(rows)


def show_values(result: HeadContribution, d_head: int) -> None:
    st.markdown("**3. The value vectors, weighted and summed: the head's context vector**")
    st.latex(CONTEXT_FORMULA)
    frame = charts.term_frame(result.keys, result.weights, result.values, result.top, result.context)
    drawn = frame[frame["component"] <= MAX_COMPONENTS]
    more = f" (the first {MAX_COMPONENTS} of {d_head} components)" if d_head > MAX_COMPONENTS else ""
    chart = charts.vector_strips(drawn, f"Rows α_j·v_j add up to the context vector{more}")
    st.altair_chart(chart, key="arith_values", width="stretch")
    with st.container(key="arith_value_table"):
        st.dataframe(value_table(result), hide_index=True)
    st.caption(
        f"The {len(result.top)} keys of largest weight one by one, the others summed; masked keys carry α = 0. "
        f"‖context‖ = {np.linalg.norm(result.context):.4f}. {DIVERGING_KEY}, on one scale."
    )


def show_projection(result: HeadContribution, at: RowAt) -> None:
    st.markdown("**4. The output projection: this head's slice of W_O**")
    st.latex(OUTPUT_FORMULA)
    d_model, d_head = result.w_o.shape
    st.caption(
        f"W_O is {d_model} × {d_model}; head {at.head + 1} owns its columns {at.head * d_head + 1}–"
        f"{(at.head + 1) * d_head}, a {d_model} × {d_head} block W_O^(h) that turns the {d_head}-number context into "
        f"a {d_model}-number contribution to the layer's output (‖contribution‖ = "
        f"{np.linalg.norm(result.contribution):.4f}). The heads' contributions plus the bias b_O are the "
        f"attention sublayer's output: largest difference from the model's own {result.layer_difference:.1e} "
        "(float rounding). The output is then added to the residual stream."
    )
    frame = charts.head_norm_frame(result.head_norms, at.head)
    chart = charts.head_norm_bars(frame, f"Each head's contribution at row {at.query + 1}")
    st.altair_chart(chart, key="arith_heads", width="stretch")


def logit_table(path: LogitPath, token: str) -> pd.DataFrame:
    rows = [
        (f"logit of {token} (the model's)", path.logit),
        ("direct path u·c, ignoring the final norm and the feed-forward after this sublayer", path.direct),
    ]
    if path.through_norm is not None and path.norm_scale is not None:
        rows.append(
            (f"direct path through the final norm, its scale σ held at {path.norm_scale:.3f}", path.through_norm)
        )
    rows += [
        ("logit with this head switched off (exact: one more pass)", path.logit_off),
        ("→ what the head adds, all paths (logit − logit off)", path.total_effect),
        (f"log p({token})", path.log_prob),
        (f"log p({token}) with this head switched off", path.log_prob_off),
    ]
    return pd.DataFrame({"quantity": [r[0] for r in rows], "value": [r[1] for r in rows]})


def show_logit(path: LogitPath, token: str) -> None:
    st.markdown(f"**5. From this head to the logit of {token}, the token this row predicts**")
    st.latex(r"z_y = u_y \cdot \operatorname{LayerNorm}(x_\text{final}), \qquad u_y = \text{the output row of } y")
    with st.container(key="arith_logit"):
        st.dataframe(logit_table(path, token), hide_index=True)
    st.caption(
        "The way from a head to a logit is not a straight line: the feed-forward after it reads its output, and "
        "the final LayerNorm divides the whole residual stream by a scale σ that the head itself changes. So: the "
        "direct path u·c is the dot product with the token's output row (tied to its embedding), ignoring both; "
        "through the final norm with σ held fixed it is one exact term of the logit (the logit is the sum of such "
        "terms over everything added to the residual stream, plus u·β) but still leaves out the feed-forward's "
        "reading; switching the head off measures everything together, exactly, but not the path."
    )


def show_after_softmax(translator: Translator, maps: SentenceMaps, at: RowAt) -> None:
    """Steps 3–5 of the arithmetic for the row ``at``: values, W_O, and (last decoder layer) the logit."""
    result, path = contribution_of_row(translator.model, translator.tokenizer, maps, at)
    show_values(result, result.values.shape[1])
    show_projection(result, at)
    if path is not None:
        show_logit(path, maps.tgt_out[at.query])
    elif at.kind != "encoder":
        st.caption(
            "Choose the last decoder layer to follow a head to the logits: from lower layers the contribution passes "
            "through later attention and feed-forward layers, where no single number says what it does (the What "
            "if tab's “Switch heads off” measures any head's total effect)."
        )
