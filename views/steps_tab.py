"""The step-by-step tab: decoding one token at a time, the probability of each choice, beam search's hypotheses."""

from __future__ import annotations

import hashlib

import altair as alt
import streamlit as st

from lab.attention.beam_trace import FATES, NOT_YET, BeamStep, beam_trace, beam_tree, step_table
from lab.attention.map_views import MapView, map_view, too_big
from lab.attention.sentence_maps import SentenceMaps, pick
from lab.attention.step_choices import Choice, choices, prefix_with
from lab.attention.token_focus import Focus
from lab.page.direction import Languages
from lab.whatif.steering import MAX_SOURCE
from lab.whatif.subject import Subject
from translate.translator import DecodeOptions, Translator
from views.map_chart import heatmap
from views.whatif_tab import forced_for, show_beside_original
from viz.beam_tree import beam_tree_chart, tree_frame
from viz.choices import choice_chart, choice_frame

BeamReplay = tuple[list[BeamStep], list[int]]  # every step of the search, and the output ids shown (EOS last)
PLAY_SECONDS = 1.5  # one decoding step per tick while playing
FORCED = "step_forced"  # session key: (source ids, output ids, step, token id) of the candidate the learner took
PICK = "step_force_pick"  # the candidate box's key begins so: one box per step of an output (``pick_key``)
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


def toggle_play(total: int) -> None:
    playing = not st.session_state.get("playing", False)
    st.session_state["playing"] = playing
    if playing and int(st.session_state.get("step", 1)) >= total:
        st.session_state["step"] = 1  # play again from the start


def step_map(view: MapView, layer: int, head: int | None, step: int, title: str, langs: Languages) -> alt.Chart:
    which = "mean of heads" if head is None else f"head {head + 1}"
    lit = Focus(frozenset({step}), frozenset())
    return heatmap(view, pick(view.weights, layer, head), title, f"layer {layer + 1}, {which}", langs, lit, True)


def current_step(total: int, ticking: bool) -> int:
    """The step shown (0-based), after the controls: moved on by one at each tick of the player."""
    if bool(st.session_state.get("playing")) != ticking:
        st.rerun()  # Play or Pause was pressed in this fragment: the whole tab reruns to start or stop the timer
    if int(st.session_state.get("step", 1)) > total:
        st.session_state["step"] = total  # a shorter sentence than the last one looked at
    if ticking and int(st.session_state.get("step", 1)) < total:
        st.session_state["step"] = int(st.session_state.get("step", 1)) + 1
    elif ticking:
        st.session_state["playing"] = False
        st.rerun()  # the end: stop the timer
    a, b, c = st.columns(3)
    a.button("← Previous", key="step_prev", on_click=move_step, args=(-1, total), disabled=total <= 1, width="stretch")
    b.button("Next →", key="step_next", on_click=move_step, args=(1, total), disabled=total <= 1, width="stretch")
    c.button("Pause" if ticking else "Play", key="step_play", on_click=toggle_play, args=(total,), width="stretch")
    return st.slider("Step", 1, total, key="step") - 1 if total > 1 else 0


def chosen_caption(choice: Choice, beam: bool) -> str:
    if beam:  # beam search ranks whole prefixes, so the token taken need not be this step's most probable
        rank = f"rank {choice.rank} at this step; beam search keeps the prefixes of highest total log-probability"
    else:
        rank = "the most probable: greedy search takes it" if choice.rank == 1 else f"ranked {choice.rank}"
    return f"Chosen: {choice.token} with probability {choice.prob:.3f} ({rank})."


def step_choice(maps: SentenceMaps, choice: Choice, step: int, beam: bool) -> None:
    """The prefix, what it predicts, the choice and its probability, the top alternatives."""
    st.text("Generated so far:")
    with st.container(key="step_generated"):
        st.code(" ".join(maps.tgt_in[: step + 1]), language=None, wrap_lines=True)
    st.text("Predicts next:")
    with st.container(key="step_predicted"):
        st.code(maps.tgt_out[step], language=None)
    st.caption(chosen_caption(choice, beam))
    frame = choice_frame(choice.top, choice.token, choice.prob)
    with st.container(key="step_top"):  # named for the browser test: Next and this chart share one screen
        st.altair_chart(
            choice_chart(frame, f"Step {step + 1}: the top {len(choice.top)}"), key="step_choice", width="stretch"
        )


def step_body(
    subject: Subject,
    steps: list[Choice],
    beam: BeamReplay | None,
    at: tuple[int, int | None],
    langs: Languages,
    ticking: bool,
) -> None:
    """One step: the controls, the choice and the top alternatives beside both decoder maps with this row lit; then
    the output continued from another candidate, if one was taken; then beam search's hypotheses and tree."""
    dec, head = at
    maps = subject.maps
    controls, *columns = st.columns(3, gap="xsmall")
    with controls:
        step = current_step(len(steps), ticking)
        step_choice(maps, steps[step], step, beam is not None)
        candidate_control(subject, steps[step])
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
        with column, st.container(key=f"step_map_{kind}"):  # named for the browser test
            st.altair_chart(step_map(view, dec, head, step, title, langs), key=f"step_{kind}", width="stretch")
    show_candidate_taken(subject, step, langs)
    if beam is not None:
        show_beam(beam, step)


def pick_key(subject: Subject, step: int) -> str:
    """The key of the candidate box at ``step`` of this output: a widget of its own for each step and prefix, since
    one box shared by all steps kept another step's selection on screen while its options changed."""
    prefix = repr((subject.src_ids, subject.tokens[:step])).encode()
    return f"{PICK}_{step + 1}_{hashlib.blake2b(prefix, digest_size=6).hexdigest()}"


def take_candidate(subject: Subject, choice: Choice, key: str) -> None:
    """Force the candidate the box holds when the button is pressed: the token on screen."""
    rank = st.session_state.get(key)
    token = choice.top_ids[rank if rank is not None else min(1, len(choice.top_ids) - 1)]
    st.session_state[FORCED] = (subject.src_ids, subject.tokens, choice.step, token)


def candidate_control(subject: Subject, choice: Choice) -> None:
    """Pick one of this step's top candidates and let the model continue from it (the What if tab's forcing)."""
    if len(subject.src_ids) > MAX_SOURCE:
        st.caption(f"Trying another candidate takes sentences of up to {MAX_SOURCE} subwords.")
        return
    if not choice.top_ids:
        return
    key = pick_key(subject, choice.step)
    st.selectbox(
        "Take another candidate here",
        range(len(choice.top_ids)),
        index=min(1, len(choice.top_ids) - 1),
        format_func=lambda i: f"{i + 1}. {choice.top[i][0]}  (p = {choice.top[i][1]:.3f})",
        key=key,
    )
    st.button(
        "Continue with this token",
        key="step_force_go",
        on_click=take_candidate,
        args=(subject, choice, key),
        help="The output so far, then this token, is forced; the model writes the rest with the page's search.",
    )


def show_candidate_taken(subject: Subject, step: int, langs: Languages) -> None:
    """The output continued from the candidate taken, beside the original: only at the step it was taken at, for
    this output."""
    taken = st.session_state.get(FORCED)
    if not taken or tuple(taken[:3]) != (subject.src_ids, subject.tokens, step):
        return
    token = taken[3]
    prefix = prefix_with(list(subject.tokens), step, token)
    result = forced_for(subject, prefix)
    tok = subject.translator.tokenizer
    piece, own = tok.tgt.id_to_piece(token), tok.tgt.id_to_piece(subject.tokens[step])
    taken_text = f"{piece} kept" if token == subject.tokens[step] else f"{piece} taken instead of {own}"
    st.markdown(f"**At step {step + 1}, {taken_text}; the model continues with the page's {subject.search_name}**")
    show_beside_original(subject, result, (f"the model's {langs.tgt}", "with the candidate"), "step_forced_output")
    st.caption(
        "Both log-probabilities are read from one teacher-forced pass each. Taking the model's own choice gives back "
        "its output (tested); the What if tab shows the maps of any forced output."
    )


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
    replay = (beam_steps(directory, tuple(src_ids), *beam, _translator=translator), tokens) if beam else None
    options = DecodeOptions(beam_size=beam[0], length_penalty=beam[1]) if beam else DecodeOptions()
    subject = Subject(translator, directory, tuple(src_ids), tuple(tokens), maps, options, dec)
    ticking = bool(st.session_state.get("playing"))
    body = st.fragment(step_body, run_every=PLAY_SECONDS if ticking else None)
    body(subject, steps, replay, (dec, head), langs, ticking)


def beam_settings(beam_size: int, length_penalty: float) -> tuple[int, float] | None:
    return (beam_size, length_penalty) if beam_size > 1 else None
