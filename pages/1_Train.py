"""Train page: bring a corpus, check it, train in the background, watch it live, stop, resume, then translate with it.

Training is a separate OS process (``python -m training.train``) managed by ``jobs.control``: it survives page
reloads and closed tabs, and this page reattaches by reading the run directory.
"""

from __future__ import annotations

import collections
import dataclasses
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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
    csv_default_columns,
    csv_header,
    detected_format,
    peek_rows,
    relabel_csv,
    source_files,
    tsv_columns,
    write_corpus,
)
from jobs.corpus_languages import MIN_CONFIDENCE, code_problem, language_warning, propose_columns
from jobs.estimate import DEV_FLOOR, DEV_SHARE, MIN_EVALS, Estimate, dev_override, save_estimate, split_sizes
from jobs.fine_tune import FINETUNE_LR, MAX_FINETUNE_LR, fine_tune_overrides
from jobs.model_gate import refusal_text, run_gate
from jobs.run_progress import final_scores, kept_text, read_budget, read_metrics, run_progress
from jobs.run_verdict import reference_points, reference_summary, score_reference_points, verdict
from jobs.stopped_run import STOPPED_SCORES_FILE, checkpoint_step, fresh, score_stopped, stopped_scores
from jobs.uploads import (
    CORPUS_DIRS_ENV,
    STAGING_DIR,
    corpus_folders,
    folder_problem,
    max_upload_mb,
    safe_filename,
    server_path,
    size_problem,
    stage_files,
)
from lab.page.direction import languages
from lab.page.model_choices import (
    find_models,
    is_usable,
    last_step,
    record_default,
    recorded_default,
    shipped_model,
    stopped_label,
)
from training import run_lock
from training.reference_points import REFERENCES_FILE
from views.train_estimate import duration, show_estimate, show_outcome
from views.train_probes import show_probes
from viz.training_charts import loss_chart, score_chart

if TYPE_CHECKING:  # the page reads presets through jobs.control
    from training.train_config import OptimConfig, RunConfig, TrainConfig

POLL_S = 2.0
LIVE = ("running", "external")  # states whose panel refreshes itself every POLL_S seconds
SOURCES = ("Upload a TSV, CSV or TMX file", "Upload a pair of line-aligned files", "A file on the server")
STATE_TEXT = {  # Streamlit's coloured text, not emoji: emoji render as boxes where no emoji font is installed
    "running": ":green[training]",
    "external": ":green[training] (started outside the app)",
    "finished": ":blue[finished]",
    "stopped": ":orange[stopped]",
    "crashed": ":red[crashed]",
    "new": "not started",
}
# Streamlit forgets a widget's value while another page runs: the settings are kept under a key of our own and put
# back when the page is shown again (buttons and uploaders cannot be set, so they are not kept).
KEPT_SETTINGS = "kept_train_settings"
KEPT_KEYS = (
    "source_kind",
    "format",
    "src_column",
    "tgt_column",
    "server_path",
    "source_lang",
    "source_lang_code",
    "target_lang",
    "target_lang_code",
    "preset",
    "finetune_lr",
    "budget_minutes",
    "budget_epochs",
    "run_name",
    "watch_run",
)
KEPT_PREFIXES = ("max_steps_", "patience_")  # one field per preset
KEPT_UPLOADS = "kept_uploads"  # {uploader key: (staged file, name as uploaded, put back after a page switch)}


def restore_settings() -> None:
    """Put back the settings kept when another page ran (a widget shown since keeps its own value)."""
    for key, value in st.session_state.get(KEPT_SETTINGS, {}).items():
        if key not in st.session_state:
            st.session_state[key] = value


def keep_settings() -> None:
    """Keep this run's settings for the next visit of the page."""
    kept = {k: v for k, v in st.session_state.items() if k in KEPT_KEYS or str(k).startswith(KEPT_PREFIXES)}
    st.session_state[KEPT_SETTINGS] = kept


# ----------------------------------------------------------------------------------------- 1. corpus


def staged_upload(
    key: str, label: str, max_mb: int, staging: Path, types: list[str] | None
) -> tuple[Path, str] | str | None:
    """(saved path under a sanitised name, name as uploaded); a message when too large; None before an upload.

    The staged file outlives a page switch (the uploader forgets it): it is used again until another is uploaded."""
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
    problem = size_problem(uploaded.size, max_mb, uploaded.name)
    if problem:
        return problem
    name = safe_filename(uploaded.name)
    path = stage_files({name: uploaded.getvalue()}, staging) / name
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
    effective = detected if fmt == "auto" else fmt
    shown_as = ((str(path), shown),)
    if effective in ("tsv", "anki"):
        rows = peek_rows(path)
        n = collections.Counter(len(r) for r in rows).most_common(1)[0][0] if rows else 0
        n = min(n, 2) if effective == "anki" else n  # Anki: two language columns, then an attribution
        if n < 2:
            return CorpusSource(path, fmt, None, shown_as)
        labels = [f"column {i + 1}: {rows[0][i][:40]!r}" if len(rows[0]) > i else f"column {i + 1}" for i in range(n)]
        src, tgt = _column_pickers(labels, (1, 0) if effective == "anki" else (0, 1))
        try:
            return CorpusSource(path, fmt, tsv_columns(n, src, tgt), shown_as)
        except CorpusError as err:
            return str(err)
    if effective == "csv":
        header = csv_header(path)
        if len(header) < 2:
            return CorpusSource(path, fmt, None, shown_as)  # the reader explains what the header must say
        src, tgt = _column_pickers([f"{i + 1}: {h}" for i, h in enumerate(header)], csv_default_columns(header))
        try:
            copy = relabel_csv(path, src, tgt, staging / "csv")
        except (CorpusError, OSError) as err:
            return str(err)
        return CorpusSource(copy, "csv", None, ((str(copy), shown),))
    return CorpusSource(path, fmt, None, shown_as)


def _column_pickers(labels: list[str], default: tuple[int, int]) -> tuple[int, int]:
    left, right = st.columns(2)
    options = list(range(len(labels)))
    src = left.selectbox(
        "Source column",
        options,
        index=default[0],
        key="src_column",
        format_func=lambda i: labels[i],
    )
    tgt = right.selectbox(
        "Target column",
        options,
        index=default[1],
        key="tgt_column",
        format_func=lambda i: labels[i],
    )
    return src, tgt


def choose_source(runs_dir: Path, max_mb: int) -> CorpusSource | str | None:
    """Where the corpus comes from; a CorpusSource to check, a message, or None while nothing is chosen."""
    staging = runs_dir / STAGING_DIR
    kind = st.radio("Corpus", SOURCES, key="source_kind", horizontal=True)
    if kind == SOURCES[0]:
        saved = staged_upload(
            "upload",
            "TSV (source<TAB>target, or Anki), CSV with a header, or a TMX translation memory",
            max_mb,
            staging,
            ["tsv", "txt", "csv", "tab", "tmx"],
        )
        return choose_columns(*saved, staging) if isinstance(saved, tuple) else saved
    if kind == SOURCES[1]:
        left, right = st.columns(2)
        with left:
            src_label = "Source sentences, one per line"
            src = staged_upload("upload_src", src_label, max_mb, staging, None)
        with right:
            tgt_label = "Target sentences, the same lines"
            tgt = staged_upload("upload_tgt", tgt_label, max_mb, staging, None)
        for saved in (src, tgt):
            if isinstance(saved, str):
                return saved
        if src is None or tgt is None:
            return None
        src_file, tgt_file = f"corpus.{SRC_LANG}", f"corpus.{TGT_LANG}"  # a Moses pair, as the checker reads it
        folder = stage_files({src_file: src[0].read_bytes(), tgt_file: tgt[0].read_bytes()}, staging)
        shown_as = ((str(folder / src_file), src[1]), (str(folder / tgt_file), tgt[1]))
        return CorpusSource(folder / "corpus", "moses", None, shown_as)
    return choose_server_file(staging)


def choose_server_file(staging: Path) -> CorpusSource | str | None:
    """A corpus file on the server, read only inside the allowed folders (after resolving ``..`` and symlinks)."""
    folders = corpus_folders()
    text = st.text_input("Path on the server (a file, or PREFIX for PREFIX.es + PREFIX.en)", key="server_path")
    listed = ", ".join(f"`{folder}`" for folder in folders)
    st.caption(f"Allowed folders ({CORPUS_DIRS_ENV}): {listed}. Relative paths start at the repository.")
    if not text.strip():
        return None
    path = server_path(text)
    problem = folder_problem(path, folders, text.strip())
    if problem:
        return problem
    if path.is_dir():
        return f"{text.strip()} is a folder; give the path of a corpus file"
    if not path.exists():
        return CorpusSource(path, "auto")  # a Moses prefix, or a missing file: the reader says which
    return choose_columns(path, text.strip(), staging)


@st.cache_data(show_spinner="Checking the corpus…", max_entries=16)
def cached_check(source: CorpusSource, clean: tuple[int, int, float], max_bytes: int, stamp: tuple) -> CorpusCheck:
    """``check_corpus`` once per source, filters and file version (``stamp``: paths, sizes, mtimes)."""
    return check_corpus(source, CleanConfig(*clean), max_bytes)


def file_stamp(source: CorpusSource) -> tuple:
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in source_files(source) if p.is_file())


OTHER = "other"  # the language pickers' last option: any ISO code, typed


def language_picker(column: DeltaGenerator, side: str, proposed: str) -> str:
    """One side's language: a short list of names, or any ISO code typed; the proposal is the default."""
    key = f"{side}_lang"
    options = [*LANGUAGES, OTHER]
    if st.session_state.get(f"{key}_proposed") != proposed:  # a new corpus: its proposal replaces the pick
        st.session_state[f"{key}_proposed"] = proposed
        st.session_state[key] = proposed if proposed in LANGUAGES else OTHER
        st.session_state[f"{key}_code"] = "" if proposed in LANGUAGES else proposed
    label = f"{side.capitalize()} language"
    code = column.selectbox(
        label, options, key=key, format_func=lambda c: "other (ISO code)" if c == OTHER else f"{name_of(c)} ({c})"
    )
    if code == OTHER:
        code = column.text_input(f"{label}: ISO code", key=f"{key}_code", placeholder="e.g. eu, pt-BR, ast").strip()
    return code


def choose_languages(check: CorpusCheck) -> tuple[str, str] | str:
    """The source and target languages, proposed from the sample pairs' text and chosen by the user; a one-line
    warning when the text reads the other way round; a message when the pick cannot be used."""
    src_code, tgt_code, confidence = propose_columns(check.sample)
    if confidence < MIN_CONFIDENCE:
        src_code, tgt_code = SRC_LANG, TGT_LANG
    left, right = st.columns(2)
    src = language_picker(left, "source", src_code)
    tgt = language_picker(right, "target", tgt_code)
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


def show_report(check: CorpusCheck, langs: tuple[str, str] = (SRC_LANG, TGT_LANG)) -> None:
    """Counts, skipped lines by reason with file:line examples, length statistics and sample pairs, each side
    named by its chosen language."""
    st.subheader("Validation report")
    skipped = sum(r.count for r in check.skipped)
    a, b, c, d = st.columns(4)
    a.metric("Format", check.fmt or "?")
    b.metric("Pairs read", f"{check.read:,}")
    c.metric("Pairs kept", f"{check.kept:,}")
    d.metric("Skipped", f"{skipped:,}")
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


# ----------------------------------------------------------------------------------------- 2. settings and start


@dataclass(frozen=True)
class Settings:
    """What Start runs: the preset, its overrides (limits, fine-tuning), and those that shape the model."""

    preset: str
    overrides: list[str]
    shape: list[str]  # fine-tuning's: what a calibration of the preset depends on besides the preset


def stopping_rules(preset: str, optim: OptimConfig, run: RunConfig) -> list[str]:
    """Every limit as a field the user sees and may change; returns their overrides and names them all."""
    st.markdown("**When training stops**")
    a, b, c, d = st.columns(4)
    minutes = a.number_input("Minutes (0 = no limit)", 0.0, 24 * 60.0, 10.0, key="budget_minutes")
    epochs = b.number_input("Epochs", 1, 100_000, 10, key="budget_epochs")
    steps = c.number_input(
        "Steps",
        1,
        10_000_000,
        optim.max_steps,
        key=f"max_steps_{preset}",
        help="The learning-rate schedule is laid out over these",
    )
    patience = d.number_input(
        "Patience (0 = never)",
        0,
        10_000,
        run.patience,
        key=f"patience_{preset}",
        help=f"Early stopping: evaluations (one every {run.eval_every:,} steps) without a better dev loss",
    )
    limits = [f"{minutes:g} minutes"] if minutes else []
    limits += [f"{int(epochs):,} epochs", f"{int(steps):,} steps"]
    if patience:
        limits.append(f"{int(patience)} evaluations (every {run.eval_every:,} steps) without a better dev loss")
    st.caption(
        f"Training stops at whichever comes first: {', '.join(limits)}. Then the best checkpoint (or the average of "
        "the last ones, whichever has the lower dev loss) is scored on the held-out test split; the result says "
        "which step it was and which limit stopped the run."
    )
    return [
        f"optim.max_minutes={float(minutes)}",
        f"optim.max_epochs={int(epochs)}",
        f"optim.max_steps={int(steps)}",
        f"run.patience={int(patience)}",
    ]


def starting_point(runs_dir: Path) -> list[str] | str:
    """Random weights, or fine-tuning a finished model (the shipped one or a run) with a small learning rate: the
    overrides, or why the choice cannot be used."""
    models = [c for c in find_models(shipped_model(), runs_dir) if c.available and c.stopped_at is None]
    labels = ["random weights (a new model)", *(c.label for c in models)]
    chosen = st.selectbox(
        "Start from",
        range(len(labels)),
        key="init_from",
        format_func=lambda i: labels[i],
        help="Fine-tuning keeps the model's tokenizer and shape and continues from its weights "
        "(a small learning rate, so that it keeps what it knows)",
    )
    if chosen == 0:
        return []
    lr = st.number_input(
        "Learning rate (fine-tuning)",
        1e-6,
        MAX_FINETUNE_LR,
        FINETUNE_LR,
        format="%.1e",
        key="finetune_lr",
        help="Small, so that your corpus adjusts the model without overwriting what it knows",
    )
    try:
        return fine_tune_overrides(models[chosen - 1].path, float(lr))
    except control.JobError as err:
        return str(err)


def training_settings(runs_dir: Path) -> tuple[Settings, Path | str]:
    """Preset, starting point, limits, and the run directory (or why the name or the settings cannot be used)."""
    presets = control.list_presets()
    preset = st.selectbox(
        "Preset",
        presets,
        key="preset",
        help="tiny: seconds (a smoke test); small: the 2-core CPU model; base: a GPU model",
    )
    config = control.read_preset(control.CONFIGS_DIR / f"{preset}.toml")
    shape = starting_point(runs_dir)
    if shape and isinstance(shape, list):
        st.caption(
            f"Fine-tuning keeps the shape of the model it starts from (its layers, width and vocabulary): the preset "
            f"“{preset}” sets only how it trains (batch size, evaluations, limits)."
        )
    overrides = stopping_rules(preset, config.optim, config.run)
    name = st.text_input("Run name (letters, digits, - and _)", "my-run", key="run_name")
    try:
        run_dir: Path | str = control.run_path(runs_dir, name.strip())
    except control.JobError as err:
        run_dir = str(err)
    if isinstance(shape, str):
        sentence = "This model cannot be fine-tuned: its folder is incomplete or unreadable. Start from another one."
        refuse(sentence, shape)
        run_dir, shape = "cannot fine-tune the chosen model", []
    elif isinstance(run_dir, Path) and (control.holds_run(run_dir) or run_lock.holder(run_dir)):
        run_dir = f"a run named {name.strip()!r} already exists: choose another name (or watch it below)"
        st.info(f"{run_dir[0].upper()}{run_dir[1:]}.")
    elif isinstance(run_dir, str):
        st.error(run_dir)
    return Settings(preset, [*shape, *overrides], shape), run_dir


def show_split(pairs: int, config: TrainConfig) -> None:
    """How many pairs the run holds out to judge itself (dev) and to score the result (test)."""
    dev, test = split_sizes(pairs, config)
    st.caption(
        f"The run holds out {dev:,} dev sentences to judge itself while it trains (at least {DEV_FLOOR}, or "
        f"{DEV_SHARE:.0%} of the corpus when that is fewer) and {test:,} test sentences to score the result."
    )


def refuse(sentence: str, details: str) -> None:
    """A refusal in words a person reads; the technical details (paths, checksums, options) in an expander."""
    st.error(sentence)
    with st.expander("Details"):
        st.code(details, language=None)


def start_job(source: CorpusSource, settings: Settings, run_dir: Path, made: Estimate | None) -> None:
    """Write the checked corpus (and the estimate shown) into the run directory and start training on it."""
    preset_path = control.CONFIGS_DIR / f"{settings.preset}.toml"

    def stage() -> Path:
        corpus = write_corpus(source, control.read_preset(preset_path).data.clean, run_dir)
        if made is not None:
            save_estimate(run_dir, made)
        return corpus

    try:  # refused before anything is written, and a start that fails removes what it wrote
        overrides = ["data.format=tsv", *settings.overrides]
        pid = control.start_staged(run_dir, preset_path, stage, overrides, owner=owner_token())
    except control.JobError as err:  # its messages are written for the page
        st.error(f"Not started: {err}")
        return
    except (CorpusError, OSError) as err:
        refuse("Not started: the corpus could not be written into the run's folder.", str(err))
        return
    st.session_state["watch_run"] = run_dir.name
    st.success(f"Started run {run_dir.name!r} (process {pid}). It keeps training if you close this tab.")


# ----------------------------------------------------------------------------------------- 3. watch


def owner_token() -> str:
    """This browser tab's token: the jobs it starts or resumes are its own to stop. Kept in the page's address too,
    so that a reload of the tab keeps it."""
    token = st.session_state.get("owner_token") or st.query_params.get("owner") or secrets.token_urlsafe(16)
    st.session_state["owner_token"] = token
    if st.query_params.get("owner") != token:
        st.query_params["owner"] = token
    return token


def watched_runs(runs_dir: Path) -> tuple[list[str], list[str]]:
    """Run directories this page can show (any that training, or this app, has written to), and the symbolic links
    in the runs folder, which are skipped: a link may point anywhere, and a run is a real folder."""
    try:
        entries = list(runs_dir.iterdir()) if runs_dir.is_dir() else []
    except OSError:
        return [], []
    links = sorted(p.name for p in entries if p.is_symlink())
    found = [p for p in entries if not p.is_symlink() and p.is_dir() and control.RUN_NAME.fullmatch(p.name)]
    return sorted(p.name for p in found if control.holds_run(p) or (p / control.EVENTS_FILE).exists()), links


def show_progress(run_dir: Path, records: list[dict]) -> None:
    budget = read_budget(run_dir)
    progress = run_progress(records, budget) if budget else None
    if progress is None:
        st.progress(0.0, text="Preparing data and the tokenizer…")
        return
    st.progress(progress.fraction, text=f"{progress.limit} · {100 * progress.fraction:.0f}%")
    a, b, c = st.columns(3)
    a.metric("Tokens/s", f"{progress.tokens_per_s:,.0f}" if progress.tokens_per_s else "–")
    b.metric("Elapsed", duration(progress.elapsed_s))
    c.metric("ETA", duration(progress.eta_s) if progress.eta_s is not None else "–")


def show_result(run_dir: Path) -> None:
    scores = final_scores(run_dir)
    if scores is None:
        return
    a, b = st.columns(2)
    a.metric("Test BLEU (greedy)", f"{scores.get('bleu', float('nan')):.2f}")
    b.metric("Test chrF (greedy)", f"{scores.get('chrf', float('nan')):.2f}")
    st.code(f"BLEU {scores.get('bleu_signature', '?')}\nchrF {scores.get('chrf_signature', '?')}", language=None)
    if kept := kept_text(run_dir):
        st.caption(kept)
    show_outcome(run_dir)
    show_reference_points(run_dir)
    st.success(f"Pick “run: {run_dir.name}” in the model picker of the Translate page to use this model.")
    default_model_gate(run_dir)


def show_reference_points(run_dir: Path) -> None:
    """The run's dev score beside a floor (the source copied), the shipped model and Apertium, scored when asked."""
    points = reference_points(run_dir) if fresh(run_dir / REFERENCES_FILE, run_dir) else None
    if points is None:
        if st.button(
            "Compare with reference points",
            key="references",
            help="The same dev sentences translated by this model, by the shipped model and by Apertium "
            "(es→en, where installed), and copied unchanged (the floor)",
        ):
            with st.spinner("Translating the dev sentences with each model…"):
                problem = score_reference_points(run_dir, shipped_model())
            if problem:
                refuse("No reference points: the other models could not translate this run's dev sentences.", problem)
            else:
                st.rerun()
        return
    rows = [
        {"model": name, "dev BLEU": row.get("bleu"), "dev chrF": row.get("chrf")}
        for name, row in points["scores"].items()
        if isinstance(row, dict)
    ]
    st.markdown(f"**Reference points** (the first {points.get('sentences', '?')} dev sentences, greedy)")
    st.markdown(reference_summary(points["scores"]))
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def show_stopped(run_dir: Path, records: list[dict]) -> None:
    """A run stopped before its end: its best checkpoint so far is a model, scored on the test split when asked,
    picked on the Translate page, made the default through the gate, or trained further (Resume)."""
    step, best = last_step(run_dir), checkpoint_step(run_dir, records)
    if not is_usable(run_dir) or best is None:
        st.caption("It stopped before its first checkpoint, so there is no model to use yet.")
        return
    st.info(
        f"Stopped at step {step:,}, before its limits. Its best checkpoint so far (step {best:,}) is a model you can "
        f"use: score it here, pick “{stopped_label(run_dir.name, step)}” on the Translate page, or resume training."
    )
    scores = stopped_scores(run_dir)
    if scores is None:
        asked = st.button(
            "Score the best checkpoint",
            key="score_stopped",
            help="Translates the run's held-out test sentences with it (greedy) and scores them",
        )
        if asked:
            with st.spinner("Translating the test sentences…"):
                problem = score_stopped(run_dir)
            if problem:
                refuse("No scores: the checkpoint could not translate this run's test sentences.", problem)
            else:
                st.rerun()
        return
    a, b = st.columns(2)
    a.metric(f"Test BLEU (greedy, step {best:,})", f"{scores['bleu']:.2f}")
    b.metric(f"Test chrF (greedy, step {best:,})", f"{scores.get('chrf', float('nan')):.2f}")
    st.caption(f"Scored from the best checkpoint ({STOPPED_SCORES_FILE}); resuming the run makes new ones.")
    show_reference_points(run_dir)
    default_model_gate(run_dir)


def default_model_gate(run_dir: Path) -> None:
    """“Use as default model”: only a run that passes the regression gate against the current default (the shipped
    model, or the run the gate made the default) becomes what the translate page shows first; a refused run can
    still be picked there."""
    runs_dir = run_dir.parent
    current = recorded_default(runs_dir)
    if current == run_dir:
        st.caption("This run is the translate page's default model (it passed the regression gate).")
        return
    mine, shipped = languages(run_dir), languages(shipped_model())
    if mine.known and shipped.known and (mine.src_code, mine.tgt_code) != (shipped.src_code, shipped.tgt_code):
        st.caption(
            f"Only a {shipped.src} → {shipped.tgt} model can become the default for now: the check that decides "
            f"compares it with the current default on {shipped.src} phrases and canary sentences, and there is no "
            f"such check yet for {mine.src} → {mine.tgt}. You can still pick this run on the Translate page."
        )
        return
    if not st.button(
        "Use as default model",
        key="make_default",
        help="Runs the regression gate (python -m workshop gate) against the current default model: "
        "dev BLEU as written and typed, everyday phrases, canary sentences",
    ):
        return
    with st.spinner("Running the regression gate against the current default model…"):
        result = run_gate(run_dir, current or shipped_model())
    if result.checks:
        rows = [
            {
                "check": c.get("name"),
                "this run": c.get("candidate"),
                "shipped": c.get("baseline"),
                "rule": c.get("rule"),
                "passed": c.get("passed"),
            }
            for c in result.checks
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True)
        wrong = [
            {"check": c.get("name"), "what this run said": line}
            for c in result.checks
            if not c.get("passed")
            for line in c.get("detail") or ()
            if isinstance(line, str)
        ]
        if wrong:
            st.caption("The sentences behind each failed check (this run's translation; the shipped model's):")
            st.dataframe(pd.DataFrame(wrong), hide_index=True)
    if result.passed:
        record_default(runs_dir, run_dir)
        st.success(f"Passed: “run: {run_dir.name}” is now the translate page's default model.")
    else:
        refuse(refusal_text(result), result.problem or "the failed checks are marked in the table above")


def job_controls(run_dir: Path, status: control.JobStatus) -> None:
    """Stop a running job that this tab started; resume a stopped or crashed one from its saved state (any tab may:
    it continues exactly where the run stopped and loses nothing; the tab that resumes it may then stop it)."""
    if status.state == "running" and not status.owned_by(owner_token()):
        st.caption("Started from another browser tab: only that tab can stop it. You can watch it here.")
    elif status.state == "running" and st.button("Stop", key="stop"):
        with st.spinner("Stopping…"):
            try:
                control.stop(run_dir, owner_token())
            except control.JobError as err:
                st.error(str(err))
                return
        st.rerun()
    if status.state in ("stopped", "crashed"):
        if not status.can_resume:
            st.caption(
                "No saved training state yet (it is written at each evaluation), so it cannot be resumed: start "
                "it again under the same name from the command line, or under a new name here."
            )
            return
        st.caption(
            "Resume continues training from where it was last saved, with the same settings and limits; nothing "
            "already learned is lost."
        )
        if st.button("Resume training", key="resume", help="Continues exactly from the last saved state"):
            try:
                control.resume(run_dir, owner=owner_token())
            except control.JobError as err:
                st.error(str(err))
                return
            st.rerun()


def run_panel(run_dir: Path, polling: bool) -> None:
    """Status, progress, charts, result and log of one run; while polling, a job that ended refreshes the page."""
    status = control.job_status(run_dir)
    if polling and status.state not in LIVE:
        st.rerun()
    st.markdown(f"**{run_dir.name}** — {STATE_TEXT[status.state]}" + (f" (PID {status.pid})" if status.pid else ""))
    records = read_metrics(run_dir)
    if status.state in LIVE:
        show_progress(run_dir, records)
    if status.state == "external":
        st.info("A training process started outside this app writes to this run: shown read-only, never stopped here.")
    tail = control.log_tail(run_dir)
    if status.state == "crashed":
        code = f" with exit code {status.returncode}" if status.returncode is not None else ""
        st.error(f"The training process ended{code} before finishing. The end of its log:")
        st.code(tail or "(the log is empty)", language=None)
    job_controls(run_dir, status)
    if status.state in ("stopped", "crashed"):
        show_stopped(run_dir, records)
    show_result(run_dir)
    if any(r.get("kind") == "eval" for r in records):
        st.info(verdict(records).text)
    if any(r.get("kind") == "train" for r in records):
        st.altair_chart(loss_chart(records), key="loss_chart")
    if any(r.get("kind") == "eval" for r in records):
        st.altair_chart(score_chart(records), key="score_chart")
    show_probes(run_dir)
    if status.state != "crashed" and tail:
        with st.expander("Training log (last lines)"):
            st.code(tail, language=None)


def watch(runs_dir: Path) -> None:
    names, links = watched_runs(runs_dir)
    if links:
        shown = ", ".join(repr(name) for name in links[:5]) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
        st.caption(f"Skipped symbolic links in the runs folder (a run is a real folder): {shown}.")
    if not names:
        st.caption(f"No runs yet in {runs_dir}.")
        return
    if st.session_state.get("watch_run") not in names:  # a fresh session (a reload): the running job's run
        running = control.running_run(runs_dir / name for name in names)
        st.session_state["watch_run"] = running.name if running is not None else names[0]
    name = st.selectbox("Run", names, key="watch_run")
    run_dir = control.run_path(runs_dir, name)
    if control.job_status(run_dir).state in LIVE:
        st.fragment(run_every=POLL_S)(run_panel)(run_dir, True)
    else:
        run_panel(run_dir, False)


# ----------------------------------------------------------------------------------------- page


def main() -> None:
    st.set_page_config(page_title="Train · Translation lab", layout="wide")
    restore_settings()
    st.title("Train on your own corpus")
    runs_dir, max_mb = control.runs_folder(), max_upload_mb()
    st.caption(f"Runs are saved in `{runs_dir}`; uploads up to {max_mb} MB.")
    st.header("1. Corpus")
    source = choose_source(runs_dir, max_mb)
    check: CorpusCheck | None = None
    langs: tuple[str, str] | str = (SRC_LANG, TGT_LANG)
    if isinstance(source, str):
        st.error(source)
    elif source is not None:
        preset = st.session_state.get("preset") or control.list_presets()[0]  # the preset's filters, as training
        c = control.read_preset(control.CONFIGS_DIR / f"{preset}.toml").data.clean
        check = cached_check(
            source, (c.min_tokens, c.max_tokens, c.max_ratio), max_mb * 1024 * 1024, file_stamp(source)
        )
        langs = choose_languages(check) if check.ok else (SRC_LANG, TGT_LANG)
        show_report(check, langs if isinstance(langs, tuple) else (SRC_LANG, TGT_LANG))
    st.header("2. Train")
    settings, run_dir = training_settings(runs_dir)
    blockers = [run_dir] if isinstance(run_dir, str) else []
    if isinstance(langs, str):
        blockers.insert(0, langs)
    else:  # the run trains, and records, the languages chosen (data.src_lang / data.tgt_lang)
        chosen = [f"data.src_lang={langs[0]}", f"data.tgt_lang={langs[1]}"]
        settings = dataclasses.replace(settings, overrides=[*chosen, *settings.overrides])
    made = None
    if check is None:
        blockers.insert(0, "choose a corpus first")
    elif not check.ok:
        blockers.insert(0, "the corpus failed validation (see the report above)")
    else:
        preset_path = control.CONFIGS_DIR / f"{settings.preset}.toml"
        try:
            config = control.read_preset(preset_path, settings.overrides)
        except control.JobError as err:
            blockers.append(str(err))
        else:
            if sized := dev_override(check.kept, config):  # the preset's dev set is too small to judge this corpus
                settings = dataclasses.replace(settings, overrides=[*settings.overrides, *sized])
                config = control.read_preset(preset_path, settings.overrides)
            show_split(check.kept, config)
            made = show_estimate(runs_dir, source, check, config, preset_path, settings.shape)
            if made is not None and made.eval_every != config.run.eval_every:
                st.caption(
                    f"Dev evaluations every {made.eval_every:,} steps: the preset's {config.run.eval_every:,} would "
                    f"leave fewer than {MIN_EVALS} in this run, and the verdict needs {MIN_EVALS}."
                )
                spaced = f"run.eval_every={made.eval_every}"
                settings = dataclasses.replace(settings, overrides=[*settings.overrides, spaced])
    if st.button("Start training", key="start", type="primary", disabled=bool(blockers)):
        start_job(source, settings, run_dir, made)
    if blockers:
        st.caption("Start is disabled: " + "; ".join(blockers) + ".")
    keep_settings()
    st.header("3. Runs")
    watch(runs_dir)


main()
