"""The Train page's check of the chosen corpus, read and cleaned as training will: the validation report (counts,
skipped lines by reason, lengths, sample pairs), the languages of its two sides (proposed from the text by
``jobs.corpus_languages``, chosen by the user, a plain line when they read swapped), and the corpus Start trains on."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.corpus import CleanConfig
from data.languages import LANGUAGES, name_of
from jobs import control
from jobs.corpus_check import SRC_LANG, TGT_LANG, CorpusCheck, CorpusSource, check_corpus, source_files
from jobs.corpus_languages import MIN_CONFIDENCE, code_problem, language_warning, propose_columns

OTHER = "other"  # the pickers' last option: any ISO code, typed


@dataclass(frozen=True)
class Corpus:
    """A corpus that passed the check, and the languages chosen for its two sides."""

    source: CorpusSource
    check: CorpusCheck
    langs: tuple[str, str]


@st.cache_data(show_spinner="Checking the corpus…", max_entries=16)
def cached_check(source: CorpusSource, clean: tuple[int, int, float], max_bytes: int, stamp: tuple) -> CorpusCheck:
    """``check_corpus`` once per source, filters and file version (``stamp``: paths, sizes, mtimes)."""
    return check_corpus(source, CleanConfig(*clean), max_bytes)


def checked_corpus(source: CorpusSource | str | None, max_mb: int) -> Corpus | str:
    """Check ``source`` as training will and show the report; the corpus with its languages, or why not."""
    if isinstance(source, str):
        st.error(source)
    if not isinstance(source, CorpusSource):
        return "choose a corpus first"
    preset = st.session_state.get("preset") or control.list_presets()[0]  # the preset's filters, as training
    c = control.read_preset(control.CONFIGS_DIR / f"{preset}.toml").data.clean
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in source_files(source) if p.is_file())
    check = cached_check(source, (c.min_tokens, c.max_tokens, c.max_ratio), max_mb * 1024 * 1024, stamp)
    langs = choose_languages(check) if check.ok else "the corpus failed validation (see the report above)"
    show_report(check, langs if isinstance(langs, tuple) else (SRC_LANG, TGT_LANG))
    return Corpus(source, check, langs) if isinstance(langs, tuple) else langs


def show_report(check: CorpusCheck, langs: tuple[str, str]) -> None:
    """Counts, skipped lines by reason with examples, lengths and sample pairs, each side named by its language."""
    st.subheader("Validation report")
    a, b, c, d = st.columns(4)
    a.metric("Format", check.fmt or "?")
    b.metric("Pairs read", f"{check.read:,}")
    c.metric("Pairs kept", f"{check.kept:,}")
    d.metric("Skipped", f"{sum(r.count for r in check.skipped):,}")
    for problem in check.problems:
        st.error(problem)
    for title, reasons in (("Skipped, by reason", check.skipped), ("Repaired and kept", check.repaired)):
        if reasons:
            st.markdown(f"**{title}**")
            rows = [
                {"reason": r.reason, "lines": r.count, "examples (file:line)": ", ".join(r.examples)} for r in reasons
            ]
            st.dataframe(pd.DataFrame(rows), hide_index=True)
    sides = {
        f"source ({SRC_LANG})": f"source ({name_of(langs[0])})",
        f"target ({TGT_LANG})": f"target ({name_of(langs[1])})",
    }
    if check.lengths:
        st.markdown("**Sentence length (whitespace tokens)**")
        lengths = [{**dataclasses.asdict(s), "side": sides.get(s.side, s.side)} for s in check.lengths]
        st.dataframe(pd.DataFrame(lengths), hide_index=True)
    if check.sample:
        st.markdown("**Sample pairs**")
        st.dataframe(pd.DataFrame(check.sample, columns=list(sides.values())), hide_index=True)


def language_picker(column: DeltaGenerator, side: str, proposed: str) -> str:
    """One side's language: a short list of names, or any ISO code typed; the proposal is the default."""
    key = f"{side}_lang"
    if st.session_state.get(f"{key}_proposed") != proposed:  # a new corpus: its proposal replaces the pick
        st.session_state[f"{key}_proposed"] = proposed
        st.session_state[key] = proposed if proposed in LANGUAGES else OTHER
        st.session_state[f"{key}_code"] = "" if proposed in LANGUAGES else proposed
    label = f"{side.capitalize()} language"
    code = column.selectbox(
        label,
        [*LANGUAGES, OTHER],
        key=key,
        format_func=lambda c: "other (ISO code)" if c == OTHER else f"{name_of(c)} ({c})",
    )
    if code == OTHER:
        code = column.text_input(f"{label}: ISO code", key=f"{key}_code", placeholder="e.g. eu, pt-BR, ast").strip()
    return code


def choose_languages(check: CorpusCheck) -> tuple[str, str] | str:
    """The source and target languages, proposed from the sample pairs and chosen by the user; or why not usable."""
    src_code, tgt_code, confidence = propose_columns(check.sample)
    if confidence < MIN_CONFIDENCE:
        src_code, tgt_code = SRC_LANG, TGT_LANG
    left, right = st.columns(2)
    src, tgt = language_picker(left, "source", src_code), language_picker(right, "target", tgt_code)
    st.caption(
        "Proposed from the text of the sample pairs (langid, offline); the run trains and records the languages "
        "you choose here."
        if confidence >= MIN_CONFIDENCE
        else "The text was too short or mixed to propose its languages: choose them."
    )
    for code in (src, tgt):
        if problem := code_problem(code):
            return problem
    if src == tgt:
        return f"source and target are both {name_of(src)}: choose two different languages"
    if warning := language_warning((src, tgt), (src_code, tgt_code, confidence)):
        st.warning(warning)
    return src, tgt
