"""The Train page's first step: where the corpus comes from (an upload, a pair of line-aligned files, or a file on
the server), its format, and which column is the source and which the target."""

from __future__ import annotations

import collections
from pathlib import Path

import streamlit as st

from data.data_config import FORMATS
from jobs.corpus_check import (
    SRC_LANG,
    TGT_LANG,
    CorpusError,
    CorpusSource,
    csv_default_columns,
    csv_header,
    detected_format,
    peek_rows,
    relabel_csv,
    tsv_columns,
)
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
            return CorpusSource(path, fmt, tsv_columns(n, src, tgt), shown_as)
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
