"""The Find the bad translations tab: a pasted text, an uploaded file or the model's dev split, translated line by
line and ranked least confident first; a row picked opens that sentence in the lab (``lab/ranking``)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from lab.ranking import (
    MAX_BYTES,
    MAX_LINES,
    THRESHOLD,
    Line,
    LinesError,
    Ranked,
    corpus_scores,
    dev_lines,
    has_dev_split,
    rank,
    read_lines,
    read_upload,
)
from translate.translator import DecodeOptions
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext, open_selected

SOURCES = ("Paste", "Upload a file", "The model's dev split")
TABLE = "ranking_table"
RESULT = "ranking_result"  # (what was ranked, the ranked rows): kept so a row can be picked after the run


def chosen_lines(model: str) -> list[Line] | None:
    """The lines the user gave, or None (with the reason shown) when there are none or they cannot be read."""
    choices = SOURCES if model and has_dev_split(Path(model)) else SOURCES[:2]
    choice = st.radio("Lines", choices, horizontal=True, key="ranking_source")
    try:
        if choice == SOURCES[0]:
            text = st.text_area(
                f"One sentence per line, or sentence<TAB>reference (at most {MAX_LINES} lines)",
                key="ranking_text",
                height=150,
                max_chars=MAX_BYTES,
            )
            return read_lines(text, "the pasted text") or None
        if choice == SOURCES[1]:
            upload = st.file_uploader(
                f"A UTF-8 .txt or .tsv file: sentence or sentence<TAB>reference per line, at most {MAX_LINES} lines",
                type=["txt", "tsv"],
                key="ranking_file",
                max_upload_size=1,  # MB: the browser refuses more; read_upload names the real limit
            )
            return None if upload is None else read_upload(upload.getvalue(), upload.name) or None
        found = dev_lines(Path(model))
        if found is None:
            return None
        lines, total = found
        if total > len(lines):
            st.caption(f"The first {len(lines)} of the dev split's {total:,} pairs (at most {MAX_LINES} are ranked).")
        return lines
    except LinesError as err:
        st.error(str(err))
        return None


def table(ranked: list[Ranked]) -> pd.DataFrame:
    """One row per line, least confident first."""
    return pd.DataFrame(
        {
            "line": [r.line.number for r in ranked],
            "confidence": [r.confidence for r in ranked],
            "low coverage": [r.low_coverage for r in ranked],
            "chrF": ["–" if r.chrf is None else f"{r.chrf:.1f}" for r in ranked],  # "–": no reference
            "source": [r.line.source for r in ranked],
            "the guard read": [r.read_as or "(as typed)" for r in ranked],
            "translation": [r.translation for r in ranked],
            "reference": [r.line.reference or "" for r in ranked],
            "cut": [r.cut for r in ranked],
        }
    )


def show_ranking(ctx: TabContext) -> None:
    """The lines, Rank, the corpus scores and the ranked table; decoded with the shown result's search settings."""
    st.caption(
        "Translate many sentences at once and rank them least confident first, to find the translations worth a "
        "look. **Confidence** is the model's mean log-probability per output token (0 is certain); with the name "
        "guard on, the worse of the line as the guard read it (its column) and as typed, so that the model is what is "
        "ranked: random letters the guard reads as a name are copied with confidence. **Low coverage** is "
        f"the share of source words whose summed cross-attention (last layer, mean of heads) is below {THRESHOLD:g}; "
        "**chrF** (sacrebleu, 0–100) needs a reference. No score proves a translation wrong: a model can be confidently "
        "wrong, and attention is not explanation. Select a row to open its sentence in the lab."
    )
    translator, request = ctx.translator, ctx.request
    options = DecodeOptions(request.beam_size, request.length_penalty, name_guard=request.name_guard)
    lines = chosen_lines(request.model)
    asked = (request.model, tuple(lines or ()), options)
    if st.button("Rank", key="ranking_run", disabled=not lines) and lines:
        try:
            with in_line("ranking"), slot():  # a progress bar that moves after each batch
                bar = st.progress(0.0, text=f"Translating {len(lines)} lines…")
                ranked = rank(
                    translator, lines, options, lambda done: bar.progress(done / len(lines), f"{done} of {len(lines)}")
                )
                bar.empty()
            st.session_state[RESULT] = (asked, ranked)
        except (LinesError, Busy) as err:
            st.error(str(err))
    kept = st.session_state.get(RESULT)
    if kept is None or kept[0] != asked:
        return
    ranked = kept[1]
    scores = corpus_scores(ranked)
    if scores is not None:
        st.caption(
            f"Corpus BLEU {scores['bleu']:.2f}, chrF {scores['chrf']:.2f} on the {scores['sentences']} lines with a "
            "reference (sacrebleu, as `python -m training evaluate` scores them)."
        )
    st.dataframe(
        table(ranked),
        key=TABLE,
        on_select=partial(open_selected, ctx.open_source, TABLE, [r.line.source for r in ranked]),
        selection_mode="single-row",
        hide_index=True,
        column_config={
            "confidence": st.column_config.NumberColumn(format="%.3f", help="mean log-probability per token (nats)"),
            "low coverage": st.column_config.NumberColumn(format="percent"),
        },
    )
