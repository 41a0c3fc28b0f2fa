"""The Teach tab: type the right English, a private copy of the model is fine-tuned a few steps on it, and the page
shows what changed: the sentence, its cross-attention, and a fixed set of other sentences (``lab/teaching``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from lab.attention.map_views import map_chart, map_view, too_big, which
from lab.attention.sentence_maps import SentenceMaps
from lab.page.direction import Languages
from lab.page.request import Request
from lab.teaching.outcome import MAX_SECONDS, MAX_STEPS, CorrectionError, Outcome, teach
from translate.translator import DecodeOptions, Translator
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext

TAUGHT = "taught"  # this session's one adaptation: its Outcome (results only, never a model)
ABOUT = (
    f"Type the right {{tgt}} and press Teach: a copy of the model private to this session is fine-tuned on that one "
    f"pair, mixed with replayed pairs, for at most {MAX_STEPS} steps or {MAX_SECONDS:g} s (it stops as soon as it "
    "produces the correction). The shared model, its files and the runs folder are never changed; Reset drops the "
    "copy. One pair and a few steps make the model memorise this sentence: it does not learn a rule."
)


def run_teach(translator: Translator, request: Request, source: str, correction: str, langs: Languages) -> None:
    """Teach now, with a progress bar; the outcome goes into the session, a refusal onto the page."""
    options = DecodeOptions(request.beam_size, request.length_penalty, name_guard=request.name_guard)
    try:  # a rerun or a closed tab raises inside any st call: the slot is released whichever one raised
        with in_line("correction"), slot():
            bar = st.progress(0.0, text="Teaching the copy…")

            def progress(step: int, seconds: float) -> None:
                share = min(1.0, max(step / MAX_STEPS, seconds / MAX_SECONDS))
                bar.progress(share, text=f"step {step}, {seconds:.1f} s")

            try:
                outcome = teach(translator, Path(request.model), langs, source, correction, options, progress)
            finally:
                bar.empty()
    except (CorrectionError, Busy) as err:
        st.warning(str(err))
        return
    st.session_state[TAUGHT] = outcome


def cross_map(maps: SentenceMaps, title: str, layer: int, head: int | None, words: bool, langs: Languages) -> None:
    """One cross-attention map at the page's layer and head, on the 0–1 scale."""
    view = map_view(maps, "cross", words)
    if note := too_big(view):
        st.info(note)
        return
    st.altair_chart(map_chart(view, layer, head, title, which(layer, head), langs, None, True))


def show_outcome(outcome: Outcome, layer: int, head: int | None, words: bool, langs: Languages) -> None:
    """Before and after: the sentence, its cross-attention, the other sentences; how the adaptation went."""
    how = f"{outcome.steps} steps, {outcome.seconds:.1f} s: {outcome.stopped}. Replayed: {outcome.replay}."
    if outcome.produced:
        st.success(f"The copy now produces the correction (greedy). {how}")
    else:
        st.warning(f"The copy does not produce the correction yet (greedy). {how}")
    before, after = st.columns(2)
    with before, st.container(key="teach_before"):
        st.caption("Before: the shared model")
        st.code(outcome.before, language=None, wrap_lines=True)  # plain text: never rendered as markdown
        cross_map(outcome.before_maps, "Cross-attention before", layer, head, words, langs)
    with after, st.container(key="teach_after"):
        st.caption("After: this session's copy")
        st.code(outcome.after, language=None, wrap_lines=True)
        cross_map(outcome.after_maps, "Cross-attention after", layer, head, words, langs)
    show_checks(outcome)


def show_checks(outcome: Outcome) -> None:
    """Did it break anything? The fixed set of other sentences before and after, the changed ones marked."""
    st.subheader("Did it break anything?")
    if not outcome.checks:
        st.info("This model has no guided examples and no dev sentences to check.")
        return
    st.caption(
        f"{len(outcome.changed)} of {len(outcome.checks)} other sentences translate differently after the "
        "adaptation. A changed one is not necessarily worse; an unchanged one proves nothing about the sentences "
        "not checked."
    )
    if outcome.guards_checks:
        st.caption(
            "These sentences were also replayed (held to their own translations) during the adaptation: they are "
            "guarded, so this check shows less than a run's own training pairs would."
        )
    frame = pd.DataFrame(
        {
            "changed": ["changed" if c.changed else "" for c in outcome.checks],
            "source": [c.source for c in outcome.checks],
            "before": [c.before for c in outcome.checks],
            "after": [c.after for c in outcome.checks],
        }
    )
    with st.container(key="teach_checks"):
        st.dataframe(frame, hide_index=True)


def show_teach(ctx: TabContext) -> None:
    """The teach form for the sentence on screen, or this session's one adaptation with its Reset."""
    request, sentence, langs = ctx.request, ctx.sentence, ctx.langs
    source = sentence.source
    st.caption(ABOUT.format(tgt=langs.tgt))
    outcome = st.session_state.get(TAUGHT)
    if isinstance(outcome, Outcome):
        if (outcome.source, outcome.model) != (source, request.model):
            st.info("The copy below was taught on another sentence or model; Reset to teach this one.")
        st.caption("Taught:")
        st.code(f"{outcome.source}\n→ {outcome.correction}", language=None, wrap_lines=True)
        tip = "Drop the adapted copy: back to the shared model."
        st.button("Reset", key="teach_reset", on_click=st.session_state.pop, args=(TAUGHT, None), help=tip)
        show_outcome(outcome, ctx.cross_layer, ctx.cross_head, ctx.display.words, langs)
        return
    st.code(source, language=None, wrap_lines=True)
    if sentence.guarded is not None:  # what the guard read for the maps above
        st.caption(
            "The copy learns this sentence as typed, not as the name guard reads it (the maps above); its "
            "translations before and after are guarded, as the page's are."
        )
    correction = st.text_input(f"The right {langs.tgt}", key="teach_text", max_chars=500)
    if st.button("Teach", key="teach", type="primary"):
        run_teach(ctx.translator, request, source, correction, langs)
        if TAUGHT in st.session_state:
            st.rerun()  # show the outcome with its Reset
