"""The name guard on the Translate page (translate/name_guard.py): what the model read in place of the names, places
and numbers it cannot know, one click to see the model alone (its own translation and maps), and the session's
switch. The maps are drawn on what the model read: they come from the ids it was given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st

from lab.attention.translate_with_maps import TextTranslation
from lab.page.request import Request
from model.run_dir import NAME_GUARD_FILE
from translate.name_guard import NameGuard
from translate.translator import UNRESTORED, Translator
from views.word_alternatives import literal

GUARD_KEY = "name_guard"  # the session's switch: on for every new translation, until switched off
KEPT_GUARD = "kept_name_guard"  # the switch, kept while the Train page runs
GUARD_HELP = (
    "Names, places and numbers this model cannot know are read as ones its training sentences use again and again "
    "(it copies those), then put back in the translation. Off: the model alone reads the text as typed."
)


def set_guard(on: bool) -> None:
    """The guard on or off for the session and for the result shown (translated again at once)."""
    st.session_state[GUARD_KEY] = on
    request = st.session_state.get("request")
    if isinstance(request, Request):
        st.session_state["request"] = replace(request, name_guard=on)


def switched() -> None:
    set_guard(bool(st.session_state[GUARD_KEY]))


def guard_switch(model_dir: Path) -> None:
    """The sidebar switch (greyed out for a model without a guard); it outlives a visit to the Train page."""
    if GUARD_KEY not in st.session_state:  # Streamlit forgets a widget's value while another page runs
        st.session_state[GUARD_KEY] = st.session_state.get(KEPT_GUARD, True)
    has = (model_dir / NAME_GUARD_FILE).is_file()
    why = GUARD_HELP if has else f"This model has no name guard ({NAME_GUARD_FILE}): it reads every text as typed."
    st.sidebar.toggle("Name guard", key=GUARD_KEY, on_change=switched, help=why, disabled=not has)
    st.session_state[KEPT_GUARD] = st.session_state[GUARD_KEY]


def stand_ins(guard: NameGuard) -> str:
    """ "Tom, Mary and Boston": the first stand-in of each kind of name."""
    names = [found[0] for kind in ("male", "female", "place") if (found := guard.stand_ins.get(kind))]
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names) or "a few names"


def show_guard(
    result: TextTranslation, translator: Translator, request: Request, guarded: TextTranslation | None = None
) -> None:
    """Beside the translation: each swap ("Ana → read as Mary") and why, or where the guard gave up; with the guard
    off, what it read in ``guarded`` (the same text's translation under the guard: the stand-ins of the try it
    used); spans marked [[ ]] the translation lost, and for a model without a guard, why (a kept span is any text:
    escaped for Markdown)."""
    guard = translator.guard
    if not_kept := [literal(span) for s in result.sentences for span in s.not_kept]:
        st.warning(f"Not kept as typed, as you asked: {', '.join(not_kept)}.", icon="⚠️")
    if guard is None:
        for note in {s.guard_note for s in result.sentences if s.guard_note}:
            st.caption(f"{note[:1].upper()}{note[1:]}.")
        return
    several = len(result.sentences) > 1
    with st.container(key="guard"):
        if not request.name_guard:
            used = guarded.sentences if guarded is not None else ()
            would = [f"{literal(w.original)} as {w.stand_in}" for s in used if s.guarded for w in s.guarded.swaps]
            st.caption(
                "Name guard off: the model alone reads the text as typed"
                + (f" (the guard would read {', '.join(would)})." if would else ".")
            )
            st.button("Guard it again", key="reguard", on_click=set_guard, args=(True,))
            return
        swaps = [w for s in result.sentences if s.guarded for w in s.guarded.swaps]
        if swaps:
            asked = lambda w: " (kept as you asked)" if w.kept else ""  # noqa: E731
            read = "; ".join(f"{literal(w.original)} → read as {w.stand_in}{asked(w)}" for w in swaps)
            st.info(
                f"{read}: this model met few names in training, mostly {stand_ins(guard)}, and copies those; each "
                "is put back after translating. The maps show what the model read."
            )
        for i, s in enumerate(result.sentences):
            which = f"Sentence {i + 1}: " if several else ""
            if note := s.guard_note:
                st.caption(f"{which}{note[:1].upper()}{note[1:]}{'; translated as typed' * (not s.guarded)}.")
            if s.unrestored:
                st.caption(f"{which}{s.unrestored} {UNRESTORED}.")
        if swaps or any(s.guard_note for s in result.sentences):
            st.button("Show the model alone (no name guard)", key="unguard", on_click=set_guard, args=(False,))
