"""The step-by-step tab: decoding one token at a time, the probability of each choice, beam search's hypotheses."""

from __future__ import annotations

import altair as alt
import streamlit as st

from lab.attention.beam_trace import BeamStep, beam_trace, step_table
from lab.attention.map_views import MapView, map_view, too_big
from lab.attention.sentence_maps import SentenceMaps, pick
from lab.attention.step_choices import Choice, choices
from lab.attention.token_focus import Focus
from lab.page.direction import Languages
from translate.translator import Translator
from views.map_chart import heatmap
from viz.choices import choice_chart, choice_frame

PLAY_SECONDS = 1.5  # one decoding step per tick while playing
SCORE_COLUMN = st.column_config.NumberColumn(
    "score (once ended)",
    help="log-probability / length^penalty, given when a hypothesis ends with </s>: the alive ones show None.",
)


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
    search = (
        "beam search keeps the few most probable prefixes and extends each, below"
        if beam
        else "greedy search picks the most probable"
    )
    st.caption(
        "Decoding one subword at a time: at each step the decoder sees what it generated so far and gives every "
        f"token of the vocabulary a probability; {search}. The current row is lit in both decoder maps."
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


def beam_settings(beam_size: int, length_penalty: float) -> tuple[int, float] | None:
    return (beam_size, length_penalty) if beam_size > 1 else None
