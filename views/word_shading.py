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
PLAIN = "<style>:is(.st-key-translation, .st-key-rewritten):has(.shaded, [data-variant=pills]) [data-testid=stText] "
PLAIN += "{font-size:0.8rem;color:#64748b}</style>"  # under shaded words, the same text plain (to copy) and small


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
        band = calibration.bands[shade] if calibration else None
        wrong = f"{round(10 * band.wrong / band.words)} in 10" if band and band.words else "not measured"
        span = f"wrong about {wrong} times (p {edges[shade]:.2f}–{edges[shade + 1]:.2f})"
        items.append(f'<span style="{STYLE};background:{colour};color:{INK[shade]}">{span}</span>')
    items.append(f'<span style="{STYLE};{GUARD_STYLE}">put back by the name guard</span>')
    intro = "Click a word for what else the model could write there. Words this pale are "
    return f"<div style='font-size:0.75em'>{intro}" + " ".join(items) + "</div>"


def legend_help(calibration: Calibration | None, model_dir: Path) -> str:
    """How the shade and the legend's figures are measured."""
    shade = "The shade is the model's probability for each word (a word of several subwords: its least sure piece). "
    if calibration is None:
        return shade + (
            "How often words this pale are wrong is not measured for this model: "
            f"`python -m workshop bench word_confidence --model {model_dir.name} --write`."
        )
    return shade + (
        f"“Wrong” is measured on {calibration.measured}: a word not among the reference translation's words "
        "(a bag of words, lowercased). A sure word can still be wrong, and an unsure one right."
    )


def shaded_line(words: list[OutputWord]) -> str:
    """Every word as a shaded span (the first MAX_WORDS; the rest named as left out), escaped: no Markdown."""
    left = f" … (the first {MAX_WORDS} of {len(words):,} words are shaded)" * (len(words) > MAX_WORDS)
    return "<div class='shaded'>" + " ".join(word_span(w) for w in words[:MAX_WORDS]) + left + "</div>"


def pill_shades(key: str, words: list[OutputWord]) -> str:
    """CSS giving the pill of each word (the words to click, ``st.pills`` of ``key``) its shade."""
    rules = []
    for i, word in enumerate(words):
        pill = f'.st-key-{key} button[data-variant="pills"]:nth-of-type({i + 1})'
        look = GUARD_STYLE if word.stand_in else f"background:{SHADES[word.shade]};color:{INK[word.shade]}"
        rules.append(f"{pill} {{{look}}}")
    rules.append(f'.st-key-{key} button[aria-checked="true"] {{outline:3px solid #dc2626}}')
    return "<style>" + "\n".join(rules) + "</style>"


def text_words(result: TextTranslation, translator: Translator) -> list[OutputWord]:
    """Every word of the translation, shaded; none when nothing was written or the record lacks probabilities."""
    words = [w for s in result.sentences for w in output_words(translator.tokenizer, s.best, s.guarded)]
    return words if all(w.stand_in or w.prob == w.prob for w in words) else []


def show_legend(model_dir: Path) -> None:
    """The shades in plain words, how they are measured one click away."""
    calibration = load_calibration(model_dir)
    with st.container(key="word_confidence"):
        st.markdown(legend(calibration), unsafe_allow_html=True, help=legend_help(calibration, model_dir))
