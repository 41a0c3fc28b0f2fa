"""The Train page's first step: where the corpus comes from (an upload, a pair of line-aligned files, or a file on
the server), its format and columns; then its check, read and cleaned as training will (counts, skipped lines by
reason, lengths, sample pairs), and the languages of its two sides (proposed from the text by
``jobs.corpus_languages``, chosen by the user, a plain line when they read swapped)."""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.corpus import CleanConfig
from data.data_config import FORMATS
from data.languages import LANGUAGES, name_of
from jobs import control
from jobs.corpus_check import (
    SRC_LANG,
    TGT_LANG,
    CorpusCheck,
    CorpusError,
    CorpusSource,
    check_corpus,
    column_names,
    csv_default_columns,
    csv_header,
    detected_format,
    peek_rows,
    relabel_csv,
    source_files,
)
from jobs.corpus_languages import MIN_CONFIDENCE, code_problem, language_warning, propose_columns
from jobs.uploads import (
    CORPUS_DIRS_ENV,
    STAGING_DIR,
    corpus_folders,
    folder_problem,
    safe_filename,
    server_path,
    size_problem,
    stage_files,
    stage_problem,
)
from model.bounded_read import SHOWN_PATH, cut, quoted
from translate.settings import repo_relative

SOURCES = ("Upload a TSV, CSV or TMX file", "Upload a pair of line-aligned files", "A file on the server")
KEPT_UPLOADS = "kept_uploads"  # {uploader key: (staged file, name as uploaded, put back after a page switch)}
OTHER = "other"  # the language pickers' last option: any ISO code, typed


def staged_upload(
    key: str, label: str, max_mb: int, staging: Path, types: list[str] | None = None
) -> tuple[Path, str] | str | None:
    """(saved path, name as uploaded); a message when too large; None before an upload. The staged file outlives a
    page switch (the uploader forgets it) until another is uploaded."""
    kept = st.session_state.setdefault(KEPT_UPLOADS, {})
    shown_before = key in st.session_state  # absent: a first visit, or back from another page
    uploaded = st.file_uploader(label, type=types, key=key, max_upload_size=max_mb)
    if uploaded is None:
        path, shown, restored = kept.get(key, (None, "", False))
        if path is None or not Path(path).is_file() or (shown_before and not restored):  # removed by the user
            kept.pop(key, None)
            return None
        kept[key] = (path, shown, True)
        st.caption(f"Using {shown}, uploaded before (upload another file to replace it).")
        if st.button("Forget it", key=f"forget_{key}"):
            kept.pop(key, None)
            st.rerun()
        return Path(path), shown
    if problem := size_problem(uploaded.size, max_mb, uploaded.name):
        return problem
    name = safe_filename(uploaded.name)
    try:
        path = stage_files({name: uploaded.getvalue()}, staging) / name
    except OSError as err:  # a full disk
        return stage_problem(uploaded.name, err)
    kept[key] = (str(path), uploaded.name, False)
    return path, uploaded.name


def choose_columns(path: Path, shown: str, staging: Path) -> CorpusSource | str:
    """Format (detected, or chosen) and which column is the source and which the target."""
    detected = detected_format(path)
    fmt = st.selectbox(
        "Format",
        FORMATS,
        key="format",
        format_func=lambda f: f"auto (detected: {detected or '?'})" if f == "auto" else f,
    )
    effective, shown_as = detected if fmt == "auto" else fmt, ((str(path), shown),)
    try:
        if effective in ("tsv", "anki"):
            rows = peek_rows(path)
            n = collections.Counter(len(r) for r in rows).most_common(1)[0][0] if rows else 0
            n = min(n, 2) if effective == "anki" else n  # Anki: two language columns, then an attribution
            if n < 2:
                return CorpusSource(path, fmt, None, shown_as)
            labels = [
                f"column {i + 1}: {rows[0][i][:40]!r}" if len(rows[0]) > i else f"column {i + 1}" for i in range(n)
            ]
            src, tgt = column_pickers(labels, (1, 0) if effective == "anki" else (0, 1))
            return CorpusSource(path, fmt, column_names(n, src, tgt), shown_as)
        header = csv_header(path) if effective == "csv" else []
        if len(header) < 2:  # not a CSV, or the reader explains what its header must say
            return CorpusSource(path, fmt, None, shown_as)
        src, tgt = column_pickers([f"{i + 1}: {h}" for i, h in enumerate(header)], csv_default_columns(header))
        copy = relabel_csv(path, src, tgt, staging / "csv")
        return CorpusSource(copy, "csv", None, ((str(copy), shown),))
    except (CorpusError, OSError) as err:
        return str(err).replace(str(path), shown)


def column_pickers(labels: list[str], default: tuple[int, int]) -> tuple[int, int]:
    """Which of the columns ``labels`` name is the source and which the target."""
    left, right = st.columns(2)
    options = list(range(len(labels)))
    src = left.selectbox("Source column", options, default[0], key="src_column", format_func=labels.__getitem__)
    tgt = right.selectbox("Target column", options, default[1], key="tgt_column", format_func=labels.__getitem__)
    return src, tgt


def choose_source(runs_dir: Path, max_mb: int) -> CorpusSource | str | None:
    """Where the corpus comes from; a CorpusSource to check, a message, or None while nothing is chosen."""
    staging = runs_dir / STAGING_DIR
    kind = st.radio("Corpus", SOURCES, key="source_kind", horizontal=True)
    if kind == SOURCES[0]:
        label = "TSV (source<TAB>target, or Anki), CSV with a header, or a TMX translation memory"
        saved = staged_upload("upload", label, max_mb, staging, ["tsv", "txt", "csv", "tab", "tmx"])
        return choose_columns(*saved, staging) if isinstance(saved, tuple) else saved
    if kind == SOURCES[2]:
        return choose_server_file(staging)
    left, right = st.columns(2)
    with left:
        src = staged_upload("upload_src", "Source sentences, one per line", max_mb, staging)
    with right:
        tgt = staged_upload("upload_tgt", "Target sentences, the same lines", max_mb, staging)
    if isinstance(src, str) or isinstance(tgt, str):
        return src if isinstance(src, str) else tgt
    if src is None or tgt is None:
        return None
    src_file, tgt_file = f"corpus.{SRC_LANG}", f"corpus.{TGT_LANG}"  # a Moses pair, as the checker reads it
    try:
        folder = stage_files({src_file: src[0].read_bytes(), tgt_file: tgt[0].read_bytes()}, staging)
    except OSError as err:
        return stage_problem(f"{src[1]} and {tgt[1]}", err)
    shown_as = ((str(folder / src_file), src[1]), (str(folder / tgt_file), tgt[1]))
    return CorpusSource(folder / "corpus", "moses", None, shown_as)


def choose_server_file(staging: Path) -> CorpusSource | str | None:
    """A corpus file on the server, read only inside the allowed folders (after resolving ``..`` and symlinks)."""
    folders = corpus_folders()
    text = st.text_input("Path on the server (a file, or PREFIX for PREFIX.es + PREFIX.en)", key="server_path")
    listed = ", ".join(f"`{repo_relative(folder)}`" for folder in folders)
    st.caption(f"Allowed folders ({CORPUS_DIRS_ENV}): {listed}. Relative paths start at the repository.")
    shown = cut(text.strip(), SHOWN_PATH)  # as given, and short: a message stays one line whatever was typed
    if not shown:
        return None
    if "\0" in text:
        return f"{quoted(text.strip())}: a path cannot hold a NUL byte"
    path = server_path(text)
    if problem := folder_problem(path, folders, shown):
        return problem
    if path.is_dir():
        return f"{shown} is a folder; give the path of a corpus file"
    if not path.exists():  # a Moses prefix, or a missing file: the reader says which
        return CorpusSource(path, "auto", None, ((str(path), shown),))
    return choose_columns(path, shown, staging)  # a FIFO or a device is refused by the reader, never opened


# ----------------------------------------------------------------------------------------- the check


@dataclass(frozen=True)
class Corpus:  # a corpus that passed the check, and the languages chosen for its two sides
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
