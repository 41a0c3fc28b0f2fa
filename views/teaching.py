"""The Translate page's teaching views — Streamlit wiring only, called from the views and ``app.py``.

Follow one token through the three views; the arithmetic behind one weight; decoding step by step with the
probabilities of the choice; warnings when the input is not in the model's source language; guided examples.
Logic lives in ``lab/`` (arithmetic, choices, beam_trace, focus, language_check, examples, labels), charts in
``viz/`` (arithmetic, choices, focus, positional_curves).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import streamlit as st

from data.case_markup import MARK
from lab.arithmetic import FORMULA, STABLE_NOTE, weight_arithmetic, why_zero, worked_example
from lab.beam_trace import BeamStep, beam_trace, step_table
from lab.choices import Choice, choices
from lab.examples import by_source
from lab.explain import Explanation
from lab.focus import Focus, Followed, describe, options, token_at
from lab.labels import axis_titles, legend_markdown
from lab.language_check import evidence, warnings
from lab.languages import Languages
from lab.maps import KIND_TITLES, KINDS, Kind, SentenceMaps, pick
from lab.views import MapView, map_view, too_big
from translate.translator import Translator
from viz.arithmetic import arithmetic_frame, score_chart, weight_bars
from viz.choices import choice_chart, choice_frame
from viz.focus import CELL_SELECTION, PANEL_SELECTION, clickable, focus_frame, picked, unit_scale, with_focus
from viz.heatmap import attention_frame, attention_heatmap
from viz.positional_curves import curves_frame, default_dimensions, positional_curves

PLAY_SECONDS = 1.5  # one decoding step per tick while playing
SCORE_COLUMN = st.column_config.NumberColumn(
    "score (once ended)",
    help="log-probability / length^penalty, given when a hypothesis ends with </s>: the alive ones show None.",
)


# --- reading aids on every map: follow a token, one colour scale, click to choose ---


def heatmap(
    view: MapView, weights: np.ndarray, title: str, subtitle: str, langs: Languages, lit: Focus | None, shared: bool
) -> alt.Chart:
    """One (rows, cols) map of ``view``, axes naming query and key, the followed token lit."""
    frame = attention_frame(weights, view.rows, view.cols, view.future, view.inputs)
    if lit is not None and (lit.rows or lit.cols):
        frame = focus_frame(frame, lit.rows, lit.cols)
    chart = attention_heatmap(frame, title, *axis_titles(view.kind, langs), subtitle=subtitle)
    if "focus" in frame.columns:
        chart = with_focus(chart)
    return unit_scale(chart) if shared else chart


def clickable_cells(chart: alt.Chart) -> alt.Chart:
    """The map with a click selection on its cells (for ``on_select``; kept out of downloaded charts)."""
    return clickable(chart, CELL_SELECTION, ["row", "col"])


def followed_token(maps: SentenceMaps) -> Followed | None:
    """The token followed in this session, if it exists in these maps."""
    token = st.session_state.get("follow")
    return token if token in options(maps) else None


def follow_picker(maps: SentenceMaps, langs: Languages) -> Followed | None:
    """Pick a token (or click a row of a map) to light its rows and columns in every view."""
    sentence = (tuple(maps.src), tuple(maps.tgt_out))
    token = st.session_state.get("follow")
    if st.session_state.get("follow_sentence") != sentence or (token is not None and token not in options(maps)):
        st.session_state["follow"] = None  # a token of another sentence: follow nothing
        st.session_state["follow_sentence"] = sentence
    return st.selectbox(
        "Follow a token",
        [None, *options(maps)],
        key="follow",
        format_func=lambda t: (
            "nothing (click a row of a map)" if t is None else describe(maps, t, langs.src, langs.tgt)
        ),
        help="Lights the token's row (where it is the query) and column (where it is a key) in every view it is in, "
        f"and in the all-heads grid; the rest is dimmed. A {langs.src} token is in the encoder map and the columns of "
        f"cross-attention; a {langs.tgt} token in masked self-attention and the rows of cross-attention. Clicking a "
        "cell of a map follows that row's token.",
    )


def cell_clicked(maps: SentenceMaps, kind: Kind, words: bool) -> None:
    """A click on a map cell follows the token of its row."""
    point = picked(st.session_state.get(f"map_{kind}"), CELL_SELECTION)
    if point and "row" in point:
        st.session_state["follow"] = token_at(maps, kind, int(point["row"]), words)


def panel_clicked(kind: Kind) -> None:
    """A click on a panel of the all-heads grid makes that layer and head the main view."""
    point = picked(st.session_state.get("grid"), PANEL_SELECTION)
    if point and {"layer", "head"} <= set(point):
        st.session_state["enc_layer" if kind == "encoder" else "dec_layer"] = int(point["layer"]) - 1
        st.session_state["head"] = int(point["head"]) - 1


def grid_aids(chart: alt.FacetChart, shared: bool) -> alt.FacetChart:
    """The all-heads grid: dimmed outside the followed token when its data has a ``focus`` column, clickable panels."""
    if "focus" in chart.data.columns:
        chart = with_focus(chart)
    return clickable(unit_scale(chart) if shared else chart, PANEL_SELECTION, ["layer", "head"])


def show_legend(maps: SentenceMaps) -> None:
    """What the special pieces mean; the case mark's line only when this sentence has one."""
    case_mark = MARK in maps.src
    with st.expander(f"Reading the tokens: ▁, <s>, </s>, <unk>{', ' + MARK if case_mark else ''}"):
        st.markdown(legend_markdown(case_mark))


# --- garbage in, guided examples ---


def show_input_check(result: Explanation, translator: Translator, langs: Languages) -> None:
    """Warn, before the translation, when the input does not look like the model's source language."""
    c = translator.model.config
    found = warnings(evidence(result, c.unk_id, c.eos_id), langs)
    if found:
        with st.container(key="input_check"):
            for line in found:
                st.warning(line)


def show_example_hint(text: str) -> None:
    example = by_source(text)
    if example is not None:
        with st.container(key="look_for"):
            st.info(f"What to look for: {example.look_for}")


# --- the arithmetic of one weight ---


def show_arithmetic(
    translator: Translator, maps: SentenceMaps, enc: int, dec: int, head: int | None, langs: Languages
) -> None:
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
        index=min(enc if kind == "encoder" else dec, maps.n_layers(kind) - 1),
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
        st.dataframe(frame.drop(columns=["label", "masked"]), hide_index=True)
    st.caption(
        f"Same as row {result.query + 1} of the map ({where}): largest difference {result.max_difference:.1e} "
        f"(float rounding). Σ weights = {row.weights.sum():.6f}. {STABLE_NOTE}"
    )
    note = why_zero(result)
    if note:
        with st.container(key="why_zero"):
            st.info(note)


# --- decoding step by step ---


@st.cache_data(show_spinner="Replaying beam search…", max_entries=32)
def beam_steps(
    directory: str, src_ids: tuple[int, ...], beam: int, penalty: float, _translator: Translator
) -> list[BeamStep]:
    """Every step of beam search for one sentence (cached per model, sentence and settings)."""
    return beam_trace(_translator.model, _translator.tokenizer, list(src_ids), beam, penalty)


def move_step(delta: int, total: int) -> None:
    st.session_state["step"] = min(total, max(1, int(st.session_state.get("step", 1)) + delta))


def toggle_play(total: int) -> None:
    playing = not st.session_state.get("playing", False)
    st.session_state["playing"] = playing
    if playing and int(st.session_state.get("step", 1)) >= total:
        st.session_state["step"] = 1  # play again from the start


def step_map(view: MapView, layer: int, head: int | None, step: int, title: str, langs: Languages) -> alt.Chart:
    which = "mean of heads" if head is None else f"head {head + 1}"
    lit = Focus(frozenset({step}), frozenset())
    return heatmap(view, pick(view.weights, layer, head), title, f"layer {layer + 1}, {which}", langs, lit, False)


def step_body(
    maps: SentenceMaps, steps: list[Choice], beams: list[BeamStep] | None, dec: int, head: int | None, langs: Languages
) -> None:
    """One step: the prefix, the choice and its probability, the top alternatives, the maps with this row lit."""
    total = len(steps)
    if int(st.session_state.get("step", 1)) > total:
        st.session_state["step"] = total  # a shorter sentence than the last one looked at
    if st.session_state.get("playing") and int(st.session_state.get("step", 1)) < total:
        st.session_state["step"] = int(st.session_state.get("step", 1)) + 1
    elif st.session_state.get("playing"):
        st.session_state["playing"] = False
        st.rerun()  # the end: stop the timer
    step = st.slider("Step", 1, total, key="step") - 1 if total > 1 else 0
    choice = steps[step]
    st.text("Generated so far:")
    with st.container(key="step_generated"):
        st.code(" ".join(maps.tgt_in[: step + 1]), language=None, wrap_lines=True)
    st.text("Predicts next:")
    with st.container(key="step_predicted"):
        st.code(maps.tgt_out[step], language=None)
    rank = "the most probable token" if choice.rank == 1 else f"ranked {choice.rank} by the model"
    st.caption(f"Chosen: {choice.token} with probability {choice.prob:.3f} ({rank}).")
    top = choice_chart(
        choice_frame(choice.top, choice.token, choice.prob), f"Step {step + 1}: the top {len(choice.top)}"
    )
    if beams is None or step >= len(beams):
        st.altair_chart(top, key="step_choice", width="stretch")
    else:
        left, right = st.columns([1, 2])
        left.altair_chart(top, key="step_choice", width="stretch")
        with right:
            st.caption(f"Beam search after step {step + 1}: the hypotheses kept, and those that ended here.")
            with st.container(key="beam_table"):
                st.dataframe(step_table(beams[step]), hide_index=True, column_config={"score": SCORE_COLUMN})
    a, b = st.columns(2)
    for column, kind, title in zip(
        (a, b),
        ("decoder", "cross"),
        ("Masked self-attention at this step", "Cross-attention at this step"),
        strict=True,
    ):
        view = map_view(maps, kind)
        if too_big(view):
            column.info(too_big(view))
            continue
        column.altair_chart(step_map(view, dec, head, step, title, langs), key=f"step_{kind}")


def show_steps(
    translator: Translator,
    directory: str,
    src_ids: list[int],
    tokens: list[int],
    maps: SentenceMaps,
    beam: tuple[int, float] | None,
    dec: int,
    head: int | None,
    langs: Languages,
) -> None:
    st.caption(
        "Decoding one subword at a time: at each step the decoder sees what it generated so far and gives every "
        "token of the vocabulary a probability; the search picks one (greedy: the most probable). The current "
        "row is lit in both decoder maps."
    )
    steps = choices(translator.model, translator.tokenizer, src_ids, tokens)
    beams = beam_steps(directory, tuple(src_ids), *beam, _translator=translator) if beam else None
    total = len(steps)
    playing = bool(st.session_state.get("playing"))
    a, b, c = st.columns(3)
    a.button("◀ Previous", key="step_prev", on_click=move_step, args=(-1, total), disabled=total <= 1)
    b.button("Next ▶", key="step_next", on_click=move_step, args=(1, total), disabled=total <= 1)
    c.button("⏸ Pause" if playing else "▶ Play", key="step_play", on_click=toggle_play, args=(total,))
    st.fragment(step_body, run_every=PLAY_SECONDS if playing else None)(maps, steps, beams, dec, head, langs)


# --- positional encoding as curves ---


def show_positional_curves(table: np.ndarray) -> None:
    d_model = table.shape[1]
    dims = st.multiselect(
        "Dimensions", list(range(d_model)), default=default_dimensions(d_model), key="pe_dims", max_selections=8
    )
    st.caption("Each dimension is a wave along the positions: low dimensions change fast, high ones slowly.")
    st.altair_chart(
        positional_curves(curves_frame(table, dims), "Positional encoding, one curve per dimension"),
        key="positional_curves",
        width="stretch",
    )


def beam_settings(beam_size: int, length_penalty: float) -> tuple[int, float] | None:
    return (beam_size, length_penalty) if beam_size > 1 else None
