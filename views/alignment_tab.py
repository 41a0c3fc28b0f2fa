"""The alignment tab: hard links read off the cross-attention, the model's best aligner (beside eflomal, a
statistical aligner), and, for a gold sentence, the alignment scored (the model forced to write the reference) drawn
with people's links and how the chosen layer and head score against them, by the bench's own code (``lab/alignment``).
Plus the picker of gold sentences."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from lab.alignment.bench_result import (
    APP_EXTRACTION,
    AlignmentFileError,
    StoredAlignment,
    default_reading,
    load_alignment,
)
from lab.alignment.gold import GOLD_ENV, fits, gold_path, offered, pair_for, reversed_gold, source_text
from lab.alignment.links import READINGS, Alignment, align
from lab.alignment.methods import ForcedPair, Method, force_decode
from lab.alignment.scoring import GoldPair, Score, read_gold
from lab.attention.sentence_maps import SentenceMaps
from lab.page.direction import Languages
from translate.translator import Translator
from views.maps import inline_spec, maps_digest
from views.tab_context import TabContext
from viz.alignment_lines import agreement_chart, agreement_frames, alignment_chart, alignment_frames

ALIGNER_KEYS = ("align_layer", "align_head", "reading")  # reset when the model changes: each has its own best
GOLD_CREDIT = "XL-WA dev (Martelli et al. 2023, CC BY-NC-SA 4.0)"


@st.cache_data(show_spinner=False, max_entries=4)
def parsed_gold(path: str, mtime_ns: int, reverse: bool) -> list[GoldPair]:
    """The gold file's pairs, parsed once per file version and direction (the picker and the tab ask on every rerun)."""
    return read_gold(Path(path), reverse)


def gold_pairs(langs: Languages) -> tuple[Path, list[GoldPair] | None, str]:
    """(gold file, its pairs as a model of ``langs`` reads them, "") or (gold file, None, why there are none)."""
    path = gold_path()
    if not path.is_file():
        return path, None, f"{path} not found (set {GOLD_ENV} to XL-WA's dev.tsv)"
    try:
        return path, parsed_gold(str(path), path.stat().st_mtime_ns, reversed_gold(langs)), ""
    except (OSError, ValueError) as err:  # GoldFormatError, or not UTF-8
        return path, None, f"{path} unreadable: {err}"


def use_gold(pairs: list[GoldPair], pick: Callable[[str], None]) -> None:
    index = st.session_state.get("gold")
    if index is not None:
        pick(source_text(pairs[index]))


def gold_picker(langs: Languages, pick: Callable[[str], None]) -> None:
    """A few short gold-aligned dev sentences, each handed to ``pick`` when picked (the page translates it at once);
    absent (with a one-line caption) when there is no gold file or the model translates another pair of languages."""
    if not fits(langs):
        st.caption(
            f"No sentences with human word alignments for {langs.src} → {langs.tgt}: the gold file is for another "
            "pair of languages."
        )
        return
    path, pairs, why = gold_pairs(langs)
    if pairs is None:
        st.caption(f"No sentences with human word alignments to pick: {why}.")
        return
    st.selectbox(
        "Or a sentence with human word alignments",
        offered(pairs),
        index=None,
        placeholder="Choose a sentence…",
        key="gold",
        format_func=lambda i: source_text(pairs[i]),
        on_change=use_gold,
        args=(pairs, pick),
        help="Translated when picked, in the Alignment tab, which scores the chosen layer and head against its human "
        f"alignments. {GOLD_CREDIT}, read from {path} when the page runs; never stored with the app.",
    )


@st.cache_data(show_spinner=False, max_entries=16)
def forced_gold(
    directory: str, target: tuple[str, ...], source: tuple[str, ...], _translator: Translator
) -> ForcedPair:
    """The bench's forced pass over one gold pair (cached per model and pair)."""
    return force_decode(_translator, GoldPair(list(target), list(source), frozenset()))


def where(method: Method) -> str:
    """ "layer 2, mean of heads" (1-based, as the selectors name them)."""
    return f"layer {method.layer + 1}, {'mean of heads' if method.head is None else f'head {method.head + 1}'}"


NOT_ALIGNMENT = (
    "**Attention is not alignment.** Each output word attends to many source words at once, for reasons of its own; "
    "the links below are only where each output word attends most, and even the model's best head agrees with "
    "people's word links far less often than a dedicated word aligner does."
)


def show_best(stored: StoredAlignment) -> None:
    """The model's best attention aligner and eflomal on the benchmark's test set, in the type of a sentence's own
    score (one sentence's AER says little beside them), and how they were found."""
    a, b, _ = st.columns(3)
    a.metric(f"AER of its best head, {stored.benchmark} test", f"{stored.aer:.2f}", help="Lower is better.")
    eflomal = ""
    if stored.eflomal_aer is not None:
        b.metric(f"AER of eflomal (a word aligner), {stored.benchmark} test", f"{stored.eflomal_aer:.2f}")
        eflomal = f"; eflomal {stored.eflomal_aer:.2f}"
    st.caption(
        f"Best aligner of this model on {stored.benchmark} test: {where(stored.best)}, "
        f'"{stored.best.reading}" reading (AER {stored.aer:.2f}{eflomal}). Chosen on {stored.benchmark} dev among '
        "every layer, head and reading, with the argmax this tab draws; offered below by default. Lower AER is better."
    )
    if eflomal:
        with st.expander("How these figures were made"):
            st.caption(
                "eflomal (Östling & Tiedemann 2016) is a statistical word aligner, no neural network and no attention: "
                "trained by python -m workshop bench alignment on this model's training corpus plus the "
                f"{stored.benchmark} sentences (their text, never their links), both directions joined "
                "(grow-diag-final-and), then scored on the same test links. It is the comparison point: what a "
                "dedicated aligner reaches on these sentences."
            )


SCORES_DEFINED = (
    "Precision: the share of the links drawn that people drew too. Recall: the share of people's links that are "
    "drawn. AER (alignment error rate) = 1 − 2 × precision × recall ÷ (precision + recall): 0 when the two "
    "alignments agree exactly, 1 when they share no link."
)


def follow_maps(dec: int, head: int | None) -> None:
    """The button's callback: the alignment takes the decoder layer and head of the maps above."""
    st.session_state["align_layer"], st.session_state["align_head"] = dec, -1 if head is None else head


def aligner_choice(
    maps: SentenceMaps, directory: str, stored: StoredAlignment | None, dec: int, head: int | None
) -> Method:
    """Layer, head and reading of the alignment: the model's stored best by default, else the last layer's mean."""
    if st.session_state.get("align_model") != directory:  # another model: start from its own best
        for key in ALIGNER_KEYS:
            st.session_state.pop(key, None)
        st.session_state["align_model"] = directory
    n_layers, n_heads = maps.n_layers("cross"), maps.n_heads
    best = stored.best if stored else None
    if best is None or best.layer >= n_layers or (best.head or 0) >= n_heads:
        best = default_reading(n_layers)  # the maps' own default
    a, b, c = st.columns([1, 1, 2])
    layer = a.selectbox(
        "Decoder layer", range(n_layers), index=best.layer, format_func=lambda i: f"layer {i + 1}", key="align_layer"
    )
    chosen_head = b.selectbox(
        "Head",
        range(-1, n_heads),
        index=0 if best.head is None else best.head + 1,
        format_func=lambda h: "mean of heads" if h < 0 else f"head {h + 1}",
        key="align_head",
    )
    if dec < n_layers and (head or 0) < n_heads:  # the maps above show this model too
        c.button(
            f"Same as the maps above ({where(Method(APP_EXTRACTION, dec, head, 'predicts'))})",
            key="align_follow",
            on_click=follow_maps,
            args=(dec, head),
        )
    reading = st.radio(
        "Reading", list(READINGS), index=list(READINGS).index(best.reading), format_func=READINGS.get, key="reading"
    )
    return Method(APP_EXTRACTION, layer or 0, None if chosen_head is None or chosen_head < 0 else chosen_head, reading)


def show_alignment(ctx: TabContext) -> None:
    translator, directory, maps, langs = ctx.translator, ctx.request.model, ctx.maps, ctx.langs
    pairs = gold_pairs(langs)[1] if fits(langs) else None
    pair = pair_for(pairs, ctx.request.text) if pairs else None  # the gold pair of this text, if any
    try:
        stored = load_alignment(Path(directory))
    except AlignmentFileError as err:
        st.warning(f"The stored alignment result cannot be read: {err}")
        stored = None
    st.markdown(NOT_ALIGNMENT)
    if stored is not None:
        with st.container(key="best_aligner"):
            show_best(stored)
    if stored is not None or pair is not None:
        with st.container(key="scores_defined"):
            st.caption(SCORES_DEFINED)
    method = aligner_choice(maps, directory, stored, ctx.cross_layer, ctx.cross_head)
    words = st.toggle("Whole words", value=True, key="align_words", help="Join subwords into words (off: subwords).")
    show_own_alignment(maps, method, words, langs)
    if pair is not None:
        show_gold_score(translator, directory, pair, method, langs)


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs={SentenceMaps: maps_digest})
def own_alignment(
    maps: SentenceMaps, method: Method, words: bool, langs: Languages
) -> tuple[list[str], dict, pd.DataFrame]:
    """(source units left out, the drawing's spec, its links) of one translation and reading, built once: every rerun
    of the page shows the open tab again."""
    result: Alignment = align(maps, method.layer, method.head, method.reading, words)
    links = [(link.target, link.source, link.weight) for link in result.links]
    tokens, link_frame = alignment_frames(result.source, result.target, links, langs.src, langs.tgt)
    chart = alignment_chart(tokens, link_frame, "Alignment of the translation above", langs.src, langs.tgt)
    table = link_frame[["target", "source", "weight"]].rename(columns={"target": langs.tgt, "source": langs.src})
    return result.excluded, inline_spec(chart), table


def show_own_alignment(maps: SentenceMaps, method: Method, words: bool, langs: Languages) -> None:
    """The hard links of the translation shown above, read off the chosen layer, head and reading."""
    excluded, spec, table = own_alignment(maps, method, words, langs)
    st.caption(
        f"Each {langs.tgt} unit of the translation above linked to the {langs.src} unit it attends to most, in the "
        "cross-attention of the decoder layer and head chosen here. Left out before the argmax: source "
        f"{', '.join(excluded) or 'nothing'} (end-of-sentence and padding soak up attention). The final </s> "
        f"row has no {langs.tgt} word. The maps above are unchanged."
    )
    st.vega_lite_chart(spec, key="alignment", width="stretch")
    with st.expander("The translation's links as a table"):  # a plain table: no data grid to load
        st.table(table, border="horizontal")


def show_gold_score(translator: Translator, directory: str, pair: GoldPair, method: Method, langs: Languages) -> None:
    """For a gold sentence: the alignment scored (the model forced to write the reference) drawn beside people's
    links, and precision, recall and AER of ``method`` on it, as ``workshop.bench.alignment`` scores it."""
    try:
        forced = forced_gold(directory, tuple(pair.target), tuple(pair.source), _translator=translator)
    except ValueError as err:
        st.info(f"This gold sentence is not scored: {err}")
        return
    found, spec, table = gold_drawing(directory, pair, method, langs, _forced=forced)
    with st.container(key="gold_score"):
        st.subheader("Against people's alignment of this sentence")
        a, b, c = st.columns(3)
        a.metric("Precision", f"{found.precision:.3f}", help="Share of the links drawn that people drew too.")
        b.metric("Recall", f"{found.recall:.3f}", help="Share of people's links the attention finds.")
        c.metric(
            "AER", f"{found.aer:.3f}", help="Alignment error rate, 1 − F1 here (no sure/possible links): 0 is perfect."
        )
        st.caption(
            f'{found.correct} of the {found.predicted} links drawn at {where(method)} ("{method.reading}" reading, '
            f"argmax per {langs.tgt} word) are among the {found.gold} links people drew. Scored as the alignment bench "
            f"scores it: the model reads the {langs.src} sentence as written (no name guard) and is forced to write "
            f"the reference {langs.tgt} of {GOLD_CREDIT}, not the translation above; subwords are joined into the "
            'reference\'s words whatever the "Whole words" switch says. Drawn below: green, both drew the link; '
            "orange, the model only; grey, people only. Precision = green ÷ (green + orange), recall = green ÷ (green "
            "+ grey)."
        )
        st.vega_lite_chart(spec, key="gold_alignment", width="stretch")
    with st.expander("People's and the model's links as a table", expanded=True):
        st.table(table, border="horizontal")


@st.cache_data(show_spinner=False, max_entries=16)
def gold_drawing(
    directory: str, pair: GoldPair, method: Method, langs: Languages, _forced: ForcedPair
) -> tuple[Score, dict, pd.DataFrame]:
    """(score, the drawing's spec, its links) of ``method`` on one gold pair, forced by ``forced_gold``, built once."""
    found = method.score_on(_forced, pair)
    weights = method.word_weights(_forced)  # (gold target words, gold source words)
    drawn = {(i, j): float(weights[i, j]) for i, j in method.links(_forced)}
    tokens, frame = agreement_frames(pair.source, pair.target, drawn, pair.links, langs.src, langs.tgt)
    title = f"Scored: the reference {langs.tgt}, {where(method)}, beside people's links"
    chart = agreement_chart(tokens, frame, title, langs.src, langs.tgt)
    table = frame[["target", "source", "drawn by"]].rename(columns={"target": langs.tgt, "source": langs.src})
    return found, inline_spec(chart), table
