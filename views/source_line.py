"""Point at a word of the translation: the source words it attended to light up in the source as typed, from one
stated layer and head, its AER beside it. CSS only (``:has()`` on the words' pills), no script and no rerun.

Which words light is computed in ``lab/alignment/source_words.py``; this file draws them.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import streamlit as st

from lab.alignment.bench_result import AlignmentFileError, StoredAlignment, load_alignment
from lab.alignment.methods import EXTRACTIONS, Method
from lab.alignment.source_words import WordSources, hover_reading, word_sources
from lab.attention.map_views import which
from lab.attention.sentence_maps import SentenceMaps
from lab.page.direction import Languages
from lab.page.output_words import output_words
from lab.whatif.steering import MAX_SOURCE
from translate.translator import Candidate, Translation, Translator
from views.maps import DISCLAIMER
from views.word_alternatives import words_key
from views.word_shading import GUARD_STYLE

LIT = "background:#fde047 !important;color:#1e293b !important;box-shadow:0 0 0 2px #facc15"
WORD = "border-radius:3px"
NOTE = "font-size:0.75em;color:#64748b;cursor:pointer"


def hover_css(key: str, sources: WordSources) -> str:
    """CSS lighting, while the pill of output word i (``st.pills`` of ``key``) is pointed at, its source words."""
    rules = []
    for i, lit in enumerate(sources.links):
        if lit:
            pill = f'.st-key-{key} button[data-variant="pills"]:nth-of-type({i + 1}):hover'
            words = ", ".join(f".source-words .sw{j}" for j in sorted(lit))
            rules.append(f"body:has({pill}) :is({words}) {{{LIT}}}")
    return "<style>" + "\n".join(rules) + "</style>"


def source_line(sources: WordSources) -> str:
    """The source as typed, one span per word (a name the guard swapped marked as the guard's), escaped."""
    spans = []
    for j, word in enumerate(sources.source):
        tip, style = "", WORD
        if word.stand_in:
            tip = f' title="{html.escape(f"the name guard had the model read {word.stand_in} here")}"'
            style += f";{GUARD_STYLE}"
        spans.append(
            f'{html.escape(word.before)}<span class="sw{j}"{tip} style="{style}">{html.escape(word.text)}</span>'
        )
    return '<div class="source-words">' + "".join(spans) + "</div>"


def reading_note(
    method: Method, aer: float | None, stored: StoredAlignment | None, model: str, langs: Languages
) -> str:
    """Which layer and head light the words, and their AER; the caveat and how it is measured one click away (HTML
    ``details``), escaped."""
    line = (
        f"Point at an {langs.tgt} word (right): the {langs.src} words it attended to light up. Cross-attention, "
        f"{which(method.layer, method.head)} (AER {'not measured' if aer is None else f'{aer:.2f}'})"
    )
    sides = {"English": langs.tgt, "Spanish": langs.src}  # EXTRACTIONS name es-en's sides
    chosen = re.sub("English|Spanish", lambda m: sides[m.group()], EXTRACTIONS[method.extraction])
    measured = f"Not measured for this model: python -m workshop bench alignment --model {model} --save."
    if stored is not None and aer is not None:
        eflomal = f"; a dedicated word aligner, eflomal, reaches {stored.eflomal_aer:.2f}" if stored.eflomal_aer else ""
        measured = (
            f"Its AER (alignment error rate: 0 when its links are people's, 1 when it shares none) on "
            f"{stored.benchmark} test is {aer:.2f}, the lowest of this model's readings on {stored.benchmark} dev"
            f"{eflomal}. The Alignment view below draws and scores it."
        )
    caveat = f"{DISCLAIMER} What lights up: {chosen}, in the rows that predict each word. {measured}"
    return (
        f"<details style='{NOTE}'><summary>{html.escape(line)} · <u>attention is not alignment</u></summary>"
        f"<b>Attention is not alignment.</b> {html.escape(caveat)}</details>"
    )


def show_source_words(
    translator: Translator,
    directory: str,
    sentence: Translation,
    candidate: Candidate,
    maps: SentenceMaps,
    langs: Languages,
) -> None:
    """The source as typed, its words lit while an output word (its pill among the words to click) is pointed at,
    and what lights them: read off ``maps``, the maps the page draws of this output."""
    src_ids, tokens = sentence.src_ids, candidate.tokens
    if len(src_ids) > MAX_SOURCE:  # no words to click (views/word_alternatives.py)
        return
    try:
        stored = load_alignment(Path(directory))
    except AlignmentFileError:
        stored = None  # the Alignment tab says why
    config = translator.model.config
    method, aer = hover_reading(stored, config.n_decoder_layers, config.n_heads)
    cross = maps.maps.cross.numpy()  # (L, H, T, S)
    words = output_words(translator.tokenizer, candidate, sentence.guarded)
    sources = word_sources(translator.tokenizer, sentence, tokens, words, cross, method)
    if sources is None:
        st.caption(f"The {langs.src} words this translation attended to cannot be shown word by word here.")
        return
    if not any(sources.links):  # nothing to light: an emoji alone, a source of no words
        return
    st.html(hover_css(words_key(src_ids, tokens), sources))
    with st.container(key="source_words"):
        st.html(source_line(sources) + reading_note(method, aer, stored, Path(directory).name, langs))
