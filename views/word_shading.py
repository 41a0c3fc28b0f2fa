"""The translation's words shaded by how sure the model was of each, with a legend calibrated on its dev split.

The words and probabilities come from the translation's record (``lab.page.output_words.py``); the text is
escaped before it goes into HTML.
"""

from __future__ import annotations

import html
from pathlib import Path

import streamlit as st

from lab.attention.translate_with_maps import TextTranslation
from lab.page.output_words import EDGES, Calibration, OutputWord, load_calibration, output_words
from translate.translator import Translator

SHADES = ("#dbeafe", "#93c5fd", "#3b82f6", "#1e3a8a")  # palest (least sure) to darkest
INK = ("#1e293b", "#1e293b", "#ffffff", "#ffffff")
GUARD_STYLE = "border-bottom:2px dashed #b45309;color:#78350f"
MAX_WORDS = 600  # words shaded on the page; the rest are named as left out
STYLE = "padding:1px 4px;margin:1px;border-radius:4px;display:inline-block;line-height:1.6"


def word_span(word: OutputWord) -> str:
    """One word as HTML: its shade and, on hover, its probability (or the guard's note)."""
    text = html.escape(word.text)
    if word.stand_in:
        tip = f"put back by the name guard: the model wrote {word.stand_in}"
        return f'<span title="{html.escape(tip)}" style="{STYLE};{GUARD_STYLE}">{text}</span>'
    pieces = f", its least sure of {len(word.positions)} pieces" if len(word.positions) > 1 else ""
    tip = f"p = {word.prob:.2f}{pieces}"
    style = f"{STYLE};background:{SHADES[word.shade]};color:{INK[word.shade]}"
    return f'<span title="{html.escape(tip)}" style="{style}">{text}</span>'


def legend(calibration: Calibration | None) -> str:
    """The shades in plain words, with how often words of each were wrong on this model's dev split."""
    edges = (0.0, *EDGES, 1.0)
    items = []
    for shade, colour in enumerate(SHADES):
        span = f"p {edges[shade]:.2f}–{edges[shade + 1]:.2f}"
        band = calibration.bands[shade] if calibration else None
        if band and band.words:
            span += f": wrong about {round(10 * band.wrong / band.words)} in 10 times"
        items.append(f'<span style="{STYLE};background:{colour};color:{INK[shade]}">{span}</span>')
    items.append(f'<span style="{STYLE};{GUARD_STYLE}">put back by the name guard</span>')
    return "<div style='font-size:0.85em'>" + " ".join(items) + "</div>"


def legend_caption(calibration: Calibration | None, model_dir: Path) -> str:
    if calibration is None:
        return (
            "Shade: the model's probability for each word (a word of several subwords: its least sure piece). How "
            f"often words this pale are wrong is not measured for this model (`python -m workshop bench "
            f"word_confidence --model {model_dir.name} --write`)."
        )
    return (
        "Shade: the model's probability for each word (a word of several subwords: its least sure piece; hover a "
        f"word for its figure). “Wrong” is measured on {calibration.measured}: a word not among the reference "
        "translation's words. A sure word can still be wrong, and an unsure one right."
    )


def show_word_confidence(result: TextTranslation, translator: Translator, model_dir: Path) -> None:
    """Every word of the best translation of every sentence, shaded, then the legend."""
    words = [
        word
        for sentence in result.sentences
        for word in output_words(translator.tokenizer, sentence.best, sentence.guarded)
    ]
    if not words or not all(w.stand_in or w.prob == w.prob for w in words):
        return  # nothing written, or a record without its tokens' probabilities
    calibration = load_calibration(model_dir)
    spans = " ".join(word_span(w) for w in words[:MAX_WORDS])
    with st.container(key="word_confidence"):
        st.markdown(f"<div>{spans}</div>", unsafe_allow_html=True)
        if len(words) > MAX_WORDS:
            st.caption(f"The first {MAX_WORDS} of {len(words):,} words are shaded.")
        st.markdown(legend(calibration), unsafe_allow_html=True)
        st.caption(legend_caption(calibration, model_dir))
