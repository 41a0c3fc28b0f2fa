"""The result of a translation: the text, what was cut, what it was computed from, and which sentence and
hypothesis the maps below show."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from lab.attention.translate_with_maps import TextTranslation, notices, shown
from lab.page.direction import Languages
from lab.page.request import Request, stale_note
from lab.whatif.steering import MAX_SOURCE
from translate.translator import Candidate, Translation, Translator
from views.word_shading import PLAIN, shaded_line, show_legend, text_words

SNIPPET = 70  # characters of a sentence in the sentence picker


def show_output(
    result: TextTranslation, request: Request, now: Request, langs: Languages, translator: Translator
) -> DeltaGenerator:
    """The translation, its words shaded (one piece's are the words to click, in the place returned) and as plain text;
    what was cut, and what it was computed from (marked when the page has changed since)."""
    note = stale_note(request, now)
    if note:
        with st.container(key="stale"):
            st.warning(note)
    st.markdown(f"**{langs.tgt}**")  # a language name: no user text goes through markdown
    st.html(PLAIN)
    if len(result.sentences) > 1 or len(result.sentences[0].src_ids) > MAX_SOURCE:  # else: its words to click
        with st.container(key="translation", border=True):  # are the translation (views/word_alternatives.py)
            if words := text_words(result, translator):
                st.html(shaded_line(words))
            st.text(shown(result.text))  # plain text, never HTML or markdown (st.code's highlighter costs the first
        if words:  # screen more than translating does)
            show_legend(Path(request.model))
    clicked = st.container()
    for notice in notices(result):
        st.warning(notice)
    with st.container(key="provenance"), st.expander("Computed from: the model, the decoding and the source"):
        st.text(f"Model: {request.model_label}  ·  decoding: {request.settings}")  # plain text, never markdown
        st.text(request.text)
    return clicked


def sentence_picker(result: TextTranslation, langs: Languages) -> Translation:
    """The sentence whose n-best list and maps are shown (no picker for a one-piece input)."""
    sentences = result.sentences
    if len(sentences) == 1:
        return sentences[0]
    st.info(
        f"This text was translated in {len(sentences)} pieces, sentence by sentence (a long sentence at its commas "
        f"or between words): the model reads at most {result.max_src_len} subwords and learned from single "
        "sentences. The maps below are those of one piece at a time: choose it here."
    )
    with st.container(key="sentences"):
        st.dataframe(
            [
                {"#": i + 1, langs.src: s.source, langs.tgt: shown(s.text), "cut": s.best.truncated or s.truncated}
                for i, s in enumerate(sentences)
            ],
            hide_index=True,
            height=min(400, 36 + 35 * len(sentences)),
        )

    def snippet(i: int) -> str:
        text = sentences[i].source
        return f"{i + 1}. {text if len(text) <= SNIPPET else text[: SNIPPET - 1] + '…'}"

    index = st.selectbox("Show the attention of sentence", range(len(sentences)), key="sentence", format_func=snippet)
    return sentences[index if index is not None and index < len(sentences) else 0]


def hypothesis_picker(sentence: Translation) -> Candidate:
    """The n-best list of the shown sentence and the hypothesis whose attention is shown."""
    if len(sentence.candidates) == 1:
        return sentence.candidates[0]
    with st.container(key="nbest"):
        st.dataframe(
            [
                {
                    "rank": i + 1,
                    "translation": shown(c.text),
                    "score": c.score,
                    "log-probability": c.log_prob,
                    "cut at the length limit": c.truncated,
                }
                for i, c in enumerate(sentence.candidates)
            ],
            hide_index=True,
        )
    index = st.selectbox(
        "Show the attention of hypothesis",
        range(len(sentence.candidates)),
        key="hypothesis",
        format_func=lambda i: f"#{i + 1}  (score {sentence.candidates[i].score:.3f})",
    )
    return sentence.candidates[index if index is not None and index < len(sentence.candidates) else 0]
