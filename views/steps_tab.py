"""The step-by-step tab: decoding one token at a time, the probability of each choice, beam search's hypotheses."""

from __future__ import annotations

import streamlit as st

from lab.attention.map_views import Focus, map_chart, map_view, too_big, which
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.step_choices import FATES, NOT_YET, BeamStep, Choice, beam_trace, beam_tree, choices, step_table
from lab.page.direction import Languages
from translate.translator import Translator
from views.tab_context import TabContext
from viz.choices import beam_tree_chart, choice_chart, choice_frame, tree_frame

BeamReplay = tuple[list[BeamStep], list[int]]  # every step of the search, and the output ids shown (EOS last)
SCORE_COLUMN = st.column_config.TextColumn(
    "score (once ended)",
    help=f"log-probability / length^penalty, given when a hypothesis ends with </s>; {NOT_YET} while it grows.",
)


@st.cache_data(show_spinner="Replaying beam search…", max_entries=32)
def beam_steps(
    directory: str, src_ids: tuple[int, ...], beam: int, penalty: float, _translator: Translator
) -> list[BeamStep]:
    """Every step of beam search for one sentence (cached per model, sentence and settings)."""
    return beam_trace(_translator.model, _translator.tokenizer, list(src_ids), beam, penalty)


def move_step(delta: int, total: int) -> None:
    st.session_state["step"] = min(total, max(1, int(st.session_state.get("step", 1)) + delta))


def current_step(total: int) -> int:
    """The step shown (0-based), after the controls."""
    if int(st.session_state.get("step", 1)) > total:
        st.session_state["step"] = total  # a shorter sentence than the last one looked at
    a, b = st.columns(2)
    a.button("← Previous", key="step_prev", on_click=move_step, args=(-1, total), disabled=total <= 1, width="stretch")
    b.button("Next →", key="step_next", on_click=move_step, args=(1, total), disabled=total <= 1, width="stretch")
    return st.slider("Step", 1, total, key="step") - 1 if total > 1 else 0


def step_choice(maps: SentenceMaps, choice: Choice, step: int, beam: bool) -> None:
    """The prefix, what it predicts, the choice and its probability, the top alternatives."""
    st.text("Generated so far:")
    with st.container(key="step_generated"):
        st.code(" ".join(maps.tgt_in[: step + 1]), language=None, wrap_lines=True)
    st.text("Predicts next:")
    with st.container(key="step_predicted"):
        st.code(maps.tgt_out[step], language=None)
    if beam:  # beam search ranks whole prefixes, so the token taken need not be this step's most probable
        rank = f"rank {choice.rank} at this step; beam search keeps the prefixes of highest total log-probability"
    else:
        rank = "the most probable: greedy search takes it" if choice.rank == 1 else f"ranked {choice.rank}"
    st.caption(f"Chosen: {choice.token} with probability {choice.prob:.3f} ({rank}).")
    frame = choice_frame(choice.top, choice.token, choice.prob)
    with st.container(key="step_top"):  # named for the browser test: Next and this chart share one screen
        st.altair_chart(
            choice_chart(frame, f"Step {step + 1}: the top {len(choice.top)}"), key="step_choice", width="stretch"
        )


@st.fragment  # Previous, Next or the slider reruns this step alone
def step_body(
    maps: SentenceMaps, steps: list[Choice], beam: BeamReplay | None, at: tuple[int, int | None], langs: Languages
) -> None:
    """One step: the controls, the choice and the top alternatives beside both decoder maps with this row lit; then
    beam search's hypotheses and tree. (Another candidate is taken by clicking its word beside the translation.)"""
    dec, head = at
    controls, *columns = st.columns(3, gap="xsmall")
    with controls:
        step = current_step(len(steps))
        step_choice(maps, steps[step], step, beam is not None)
    for column, kind, title in zip(
        columns,
        ("decoder", "cross"),
        ("Masked self-attention at this step", "Cross-attention at this step"),
        strict=True,
    ):
        view = map_view(maps, kind)
        if too_big(view):
            column.info(too_big(view))
            continue
        chart = map_chart(view, dec, head, title, which(dec, head), langs, Focus(frozenset({step}), frozenset()), True)
        with column, st.container(key=f"step_map_{kind}"):  # named for the browser test
            st.altair_chart(chart, key=f"step_{kind}", width="stretch")
    if beam is not None:
        show_beam(beam, step)


def show_beam(beam: BeamReplay, step: int) -> None:
    """The hypotheses alive after this step, and the whole search as a tree with this step marked."""
    steps, chosen = beam
    if step < len(steps):
        st.caption(f"Beam search after step {step + 1}: the hypotheses kept, and those that ended here.")
        with st.container(key="beam_table"):
            st.dataframe(step_table(steps[step]), hide_index=True, column_config={"score": SCORE_COLUMN})
    st.caption(
        "The whole search as a tree: each dot is a prefix the beam held; grey ones were pruned (no survivor grew "
        "from them), green ones ended with </s>, orange is the hypothesis shown. The band marks this step."
    )
    frame = tree_frame(beam_tree(steps, chosen))
    st.altair_chart(beam_tree_chart(frame, "Beam search tree", FATES, step + 1), key="beam_tree", width="stretch")


def show_steps(ctx: TabContext) -> None:
    translator, src_ids, tokens = ctx.translator, ctx.sentence.src_ids, ctx.candidate.tokens
    request = ctx.request
    beam = (request.beam_size, request.length_penalty) if request.beam_size > 1 else None
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
    replay = (beam_steps(request.model, tuple(src_ids), *beam, _translator=translator), tokens) if beam else None
    step_body(ctx.maps, steps, replay, (ctx.cross_layer, ctx.cross_head), ctx.langs)
