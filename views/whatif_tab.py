"""The What if tab: change something in the model's input or inside the model, and watch the translation change.

One tool runs at a time (the page's work stays bounded); each is computed by the model itself (``lab/whatif``).
"""

from __future__ import annotations

import streamlit as st

from lab.page.direction import Languages
from lab.whatif.steering import MAX_SOURCE, Subject
from translate.translator import DecodeOptions
from views.tab_context import TabContext
from views.whatif_attribution import show_attribution
from views.whatif_heads import show_heads
from views.whatif_source import show_source_edit


def tools(langs: Languages) -> tuple[str, ...]:
    """The tools' names in the model's languages. (A word of the translation is changed by clicking it, beside the
    translation: views/word_alternatives.py.)"""
    return f"Change the {langs.src}", "Switch heads off", "Attribution"


def show_whatif(ctx: TabContext) -> None:
    """The tool picker and the tool chosen, for the page's sentence and hypothesis, decoded as the page decodes."""
    options = DecodeOptions(beam_size=ctx.request.beam_size, length_penalty=ctx.request.length_penalty)
    src_ids, tokens, langs = tuple(ctx.sentence.src_ids), tuple(ctx.candidate.tokens), ctx.langs
    subject = Subject(ctx.translator, ctx.request.model, src_ids, tokens, ctx.maps, options, ctx.cross_layer)
    st.caption(
        "Ask the model “what if?”: change its input or its inside and see what it does. Every number here is "
        "computed by the model itself; none of it proves why the model translates as it does."
    )
    if len(subject.src_ids) > MAX_SOURCE:
        st.info(f"This sentence has {len(subject.src_ids)} subwords; the what-if tools take up to {MAX_SOURCE}.")
        return
    names = tools(langs)
    tool = st.radio("Tool", names, key="whatif_tool", horizontal=True)
    (show_source_edit, show_heads, show_attribution)[names.index(tool)](subject, langs)
