"""What the page says about the input: garbage-in warnings before the translation, a guided example's hint."""

from __future__ import annotations

import streamlit as st

from lab.attention.explain import Explanation
from lab.page.direction import Languages
from lab.page.examples import by_source
from lab.page.language_check import evidence, warnings
from translate.translator import Translator


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
