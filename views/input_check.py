"""What the page says about the input: garbage-in warnings before the translation, the model's doubt, a guided
example's hint (only where the model translates the example as accepted and its maps bear the hint out)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from lab.attention.sentence_maps import SentenceMaps
from lab.attention.translate_with_maps import TextTranslation
from lab.page.direction import Languages
from lab.page.examples import MapClaim, by_source, is_accepted
from lab.page.language_check import MIN_TOKEN_PROB, Doubt, evidence, model_doubt, unsure, warnings
from lab.page.unfamiliar import loop, reading
from translate.translator import Translator
from views.maps import HEAD_KEYS, LAYER_KEYS


@st.cache_data(show_spinner="Measuring how often this model is wrong when it is unsure, on its dev split…")
def doubt(directory: str, version: int, _translator: Translator) -> Doubt:
    """The model's own doubt figures (``model_doubt``), once per model and version of its weights."""
    return model_doubt(Path(directory), _translator)


def show_input_check(
    result: TextTranslation, translator: Translator, directory: str, version: int, langs: Languages
) -> None:
    """Warn when the input does not look like the model's source language; otherwise one note, with its figure, when
    the translation is to be read with care (``unsure``: the model unsure, the text unfamiliar, a loop)."""
    c = translator.model.config
    found = evidence(result, c.unk_id, c.eos_id, translator.guard)
    wrong_language = warnings(found, langs)
    if wrong_language:
        with st.container(key="input_check"):
            for line in wrong_language:
                st.warning(line)
        return
    far = reading(result.sentences, translator.guard) if translator.guard else None
    # The model's figures only when there may be something to say: one without doubt.json is measured on first use.
    may_say = found.token_prob < MIN_TOKEN_PROB or (far is not None and far.far) or loop(result.text)
    if may_say and (line := unsure(found, langs, doubt(directory, version, translator), far)):
        with st.container(key="unsure"):
            st.warning(line)


def show_example_hint(result: TextTranslation, maps: SentenceMaps, langs: Languages) -> None:
    """A guided example's "What to look for", when the model translates it as accepted and the hint's claim holds in
    the ``maps`` shown (no second pass); else one caption saying why there is none."""
    example = by_source(result.source, langs)
    if example is None:
        return
    if len(result.sentences) != 1 or not is_accepted(result.text, example):
        why = "translates this example differently from the accepted answers"
    elif not example.claim.holds(maps):
        why = "translates this example as accepted, but its maps do not show what the hint describes"
    else:
        with st.container(key="look_for"):
            st.info(f"What to look for: {example.look_for}")
            st.button("Show this view in the maps", key="show_hint_view", on_click=show_view, args=(example.claim,))
        return
    with st.container(key="no_hint"):
        st.caption(f"No hint for this example: this model {why}.")


def show_view(claim: MapClaim) -> None:
    """Set the maps' layer, head and word level to the view a hint speaks of (before the page runs again)."""
    st.session_state[LAYER_KEYS[claim.kind]] = claim.layer
    st.session_state[HEAD_KEYS[claim.kind]] = -1 if claim.head is None else claim.head
    st.session_state["words"] = claim.words
