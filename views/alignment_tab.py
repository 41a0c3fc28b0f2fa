"""The alignment tab: hard links read off the cross-attention, the model's best aligner, and, for a gold sentence,
how the chosen layer and head score against people's links. Plus the picker of gold sentences beside the input.

Logic lives in ``lab/alignment/`` (links, methods, bench_result, gold, scoring), the chart in
``viz/alignment_lines``. The score is computed by the bench's own code (``Method.score_on`` on ``force_decode``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from lab.alignment.bench_result import APP_EXTRACTION, AlignmentFileError, StoredAlignment, load_alignment
from lab.alignment.gold import GOLD_ENV, fits, gold_path, offered, pair_for, source_text
from lab.alignment.links import READINGS, align
from lab.alignment.methods import ForcedPair, Method, force_decode
from lab.alignment.scoring import GoldPair, read_gold
from lab.attention.sentence_maps import SentenceMaps
from lab.page.direction import Languages
from translate.translator import Translator
from viz.alignment_lines import alignment_chart, alignment_frames

ALIGNER_KEYS = ("align_layer", "align_head", "reading")  # reset when the model changes: each has its own best
GOLD_CREDIT = "XL-WA dev (Martelli et al. 2023, CC BY-NC-SA 4.0)"


# --- gold sentences: picked beside the input, scored in the tab ---


@st.cache_data(show_spinner=False, max_entries=4)
def parsed_gold(path: str, mtime_ns: int) -> list[GoldPair]:
    """The gold file's pairs, parsed once per version of the file (the picker and the tab both ask on every rerun)."""
    return read_gold(Path(path))


def gold_pairs() -> tuple[Path, list[GoldPair] | None, str]:
    """(gold file, its pairs, "") or (gold file, None, why there are none)."""
    path = gold_path()
    if not path.is_file():
        return path, None, f"{path} not found (set {GOLD_ENV} to XL-WA's dev.tsv)"
    try:
        return path, parsed_gold(str(path), path.stat().st_mtime_ns), ""
    except (OSError, ValueError) as err:  # GoldFormatError, or not UTF-8
        return path, None, f"{path} unreadable: {err}"


def use_gold(pairs: list[GoldPair]) -> None:
    index = st.session_state.get("gold")
    if index is not None:
        st.session_state["source"] = source_text(pairs[index])


def gold_picker(langs: Languages) -> None:
    """A few short gold-aligned dev sentences; absent (with a one-line caption) when there is no gold file or the
    model translates another pair of languages."""
    if not fits(langs):
        st.caption(
            f"No sentences with human word alignments for {langs.src} → {langs.tgt}: the gold file is for another "
            "pair of languages."
        )
        return
    path, pairs, why = gold_pairs()
    if pairs is None:
        st.caption(f"No sentences with human word alignments to pick: {why}.")
        return
    st.selectbox(
        "Or a sentence with human word alignments",
        offered(pairs),
        index=None,
        placeholder=f"{GOLD_CREDIT}: translate one, then the Alignment tab scores the chosen layer and head…",
        key="gold",
        format_func=lambda i: source_text(pairs[i]),
        on_change=use_gold,
        args=(pairs,),
        help=f"{GOLD_CREDIT}, read from {path} when the page runs; never stored with the app.",
    )


@st.cache_data(show_spinner=False, max_entries=16)
def forced_gold(
    directory: str, target: tuple[str, ...], source: tuple[str, ...], _translator: Translator
) -> ForcedPair:
    """The bench's forced pass over one gold pair (cached per model and pair)."""
    return force_decode(_translator, GoldPair(list(target), list(source), frozenset()))


# --- the model's best aligner and the layer, head and reading shown ---


def stored_best(directory: str) -> StoredAlignment | None:
    try:
        return load_alignment(Path(directory))
    except AlignmentFileError as err:
        st.warning(f"The stored alignment result cannot be read: {err}")
        return None


def where(method: Method) -> str:
    """ "layer 2, mean of heads" (1-based, as the selectors name them)."""
    return f"layer {method.layer + 1}, {'mean of heads' if method.head is None else f'head {method.head + 1}'}"


def best_caption(stored: StoredAlignment) -> str:
    eflomal = "" if stored.eflomal_aer is None else f"; eflomal {stored.eflomal_aer:.2f}"
    return (
        f"Best aligner of this model on {stored.benchmark} test: {where(stored.best)}, "
        f'"{stored.best.reading}" reading (AER {stored.aer:.2f}{eflomal}). Chosen on {stored.benchmark} dev among '
        "every layer, head and reading, with the argmax this tab draws; offered below by default. Lower AER is better."
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
        best = Method(APP_EXTRACTION, n_layers - 1, None, "predicts")  # the maps' own default
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


# --- the tab ---


def show_alignment(
    translator: Translator,
    directory: str,
    text: str,
    maps: SentenceMaps,
    dec: int,
    head: int | None,
    words: bool,
    langs: Languages,
) -> None:
    stored = stored_best(directory)
    if stored is not None:
        with st.container(key="best_aligner"):
            st.caption(best_caption(stored))
    st.info(
        "Attention is not explanation: an alignment read from attention is a window into the model, not proof "
        "of why it chose a word."
    )
    method = aligner_choice(maps, directory, stored, dec, head)
    st.caption(
        f"Each {langs.tgt} unit linked to the {langs.src} unit it attends to most, in the cross-attention of the "
        "decoder layer and head chosen here."
    )
    result = align(maps, method.layer, method.head, method.reading, words)
    st.caption(
        f"Left out before the argmax: source {', '.join(result.excluded) or 'nothing'} (end-of-sentence and "
        f"padding soak up attention). The final </s> row has no {langs.tgt} word. The maps above are unchanged."
    )
    links = [(link.target, link.source, link.weight) for link in result.links]
    tokens, link_frame = alignment_frames(result.source, result.target, links, langs.src, langs.tgt)
    chart = alignment_chart(tokens, link_frame, "Alignment", langs.src, langs.tgt)
    st.altair_chart(chart, key="alignment", width="stretch")
    st.dataframe(
        link_frame[["target", "source", "weight"]].rename(columns={"target": langs.tgt, "source": langs.src}),
        hide_index=True,
    )
    show_gold_score(translator, directory, text, method, langs)


def show_gold_score(translator: Translator, directory: str, text: str, method: Method, langs: Languages) -> None:
    """For a gold sentence: precision, recall and AER of ``method`` on it, as ``bench.alignment`` scores it."""
    if not fits(langs):
        return
    _, pairs, _ = gold_pairs()
    pair = pair_for(pairs, text) if pairs else None
    if pair is None:
        return
    try:
        forced = forced_gold(directory, tuple(pair.target), tuple(pair.source), _translator=translator)
    except ValueError as err:
        st.info(f"This gold sentence is not scored: {err}")
        return
    found = method.score_on(forced, pair)
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
            f"argmax per {langs.tgt} word) are among the {found.gold} links people drew. Scored as bench.alignment "
            f"scores it: the model reads the {langs.src} sentence and is forced to write the reference {langs.tgt} of "
            f"{GOLD_CREDIT}, not the translation above; subwords are joined into the reference's words whatever "
            'the "Whole words" switch says.'
        )
    st.dataframe(link_table(method.links(forced), pair, langs), hide_index=True, key="gold_links")


def link_table(drawn: set[tuple[int, int]], pair: GoldPair, langs: Languages) -> pd.DataFrame:
    """Every link drawn or gold, in English word order: the two words and who drew it."""
    rows = [
        {
            langs.tgt: pair.target[i],
            langs.src: pair.source[j],
            "drawn by": "both"
            if (i, j) in drawn and (i, j) in pair.links
            else "attention"
            if (i, j) in drawn
            else "people",
        }
        for i, j in sorted(drawn | pair.links)
    ]
    return pd.DataFrame(rows, columns=[langs.tgt, langs.src, "drawn by"])
