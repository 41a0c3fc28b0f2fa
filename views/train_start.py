"""The Train page's second step: the settings (the preset, the starting point: random weights or fine-tuning a
finished model, every limit that stops training, the run's name; kept across a visit of another page), the split
and the estimate for the checked corpus, and Start, disabled (saying why) while something is missing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from data.languages import name_of
from jobs import control
from jobs.corpus_check import CorpusError, CorpusSource, write_corpus
from jobs.estimate import DEV_FLOOR, DEV_SHARE, MIN_EVALS, Estimate, dev_override, save_estimate, split_sizes
from lab.page.direction import languages
from lab.page.model_choices import find_models, other_shipped, shipped_model, shipped_of
from views.refusal import refuse
from views.train_corpus import Corpus
from views.train_estimate import show_estimate
from views.train_run import owner_token

if TYPE_CHECKING:  # the page reads presets through jobs.control
    from training.train_config import OptimConfig, RunConfig

# Streamlit forgets a widget's value while another page runs: the settings are kept under a key of our own and put
# back when the page is shown again (buttons and uploaders cannot be set, so they are not kept).
KEPT_SETTINGS = "kept_train_settings"
KEPT_KEYS = ("source_kind", "format", "src_column", "tgt_column", "server_path", "preset", "finetune_lr")
KEPT_KEYS += ("budget_minutes", "budget_epochs", "run_name", "watch_run")
KEPT_PREFIXES = ("max_steps_", "patience_", "source_lang", "target_lang")  # a field per preset; a pick per side
KEPT_START = "kept_init_from"  # the starting point by its label: the list of models may change meanwhile
KEPT_OFFER = "kept_init_offer"  # the corpus direction and models offered when the starting point was last set
PRESET_HELP = "tiny: seconds (a smoke test); small: the 2-core CPU model; base: a GPU model"
START_HELP = "Fine-tuning keeps the model's tokenizer and shape and continues from its weights (a small learning rate)"
LR_HELP = "Small, so that your corpus adjusts the model without overwriting what it knows"


def back_from_another_page() -> bool:
    """True on the page's first run after another page ran (or a first visit): Start, a button no code sets, is gone
    with the page's widgets, while a value set from code may linger out of date."""
    return "start" not in st.session_state


def restore_settings() -> None:
    """Put back the settings kept when another page ran, over any value left from before."""
    if back_from_another_page():
        st.session_state.update(st.session_state.get(KEPT_SETTINGS, {}))


def keep_settings() -> None:
    """Keep this run's settings for the next visit of the page."""
    kept = {k: v for k, v in st.session_state.items() if k in KEPT_KEYS or str(k).startswith(KEPT_PREFIXES)}
    st.session_state[KEPT_SETTINGS] = kept


def stopping_rules(preset: str, optim: OptimConfig, run: RunConfig) -> list[str]:
    """Every limit as a field the user sees and may change; returns their overrides and names them all."""
    st.markdown("**When training stops**")
    a, b, c, d = st.columns(4)
    minutes = a.number_input("Minutes (0 = no limit)", 0.0, 24 * 60.0, 10.0, key="budget_minutes")
    epochs = b.number_input("Epochs", 1, 100_000, 10, key="budget_epochs")
    schedule = "The learning-rate schedule is laid out over these"
    steps = c.number_input("Steps", 1, 10_000_000, optim.max_steps, key=f"max_steps_{preset}", help=schedule)
    every = f"every {run.eval_every:,} steps"
    waits = f"Early stopping: evaluations (one {every}) without a better dev loss"
    patience = d.number_input("Patience (0 = never)", 0, 10_000, run.patience, key=f"patience_{preset}", help=waits)
    limits = [f"{minutes:g} minutes"] if minutes else []
    limits += [f"{int(epochs):,} epochs", f"{int(steps):,} steps"]
    limits += [f"{int(patience)} evaluations ({every}) without a better dev loss"] if patience else []
    st.caption(
        f"Training stops at whichever comes first: {', '.join(limits)}. Then the best checkpoint (or the average of "
        "the last ones, whichever has the lower dev loss) is scored on the held-out test split; the result says "
        "which step it was and which limit stopped the run."
    )
    fields = {"optim.max_minutes": float(minutes), "optim.max_epochs": int(epochs), "optim.max_steps": int(steps)}
    return [f"{key}={value}" for key, value in {**fields, "run.patience": int(patience)}.items()]


def starting_point(runs_dir: Path, pair: tuple[str, str] | None) -> list[str] | str:
    """Random weights, or fine-tuning a model of the corpus's direction (by default its shipped one); or why not."""
    found = find_models(shipped_model(), runs_dir, also=other_shipped())
    models = [c for c in found if c.available and c.stopped_at is None]
    if pair is not None:  # fine-tuning keeps a model's direction: another direction's models are not offered
        other = [c for c in models if languages(c.path).known and languages(c.path).pair != pair]
        models = [c for c in models if c not in other]
        if other:
            names = "; ".join(f"{c.label} (from {languages(c.path).src} into {languages(c.path).tgt})" for c in other)
            st.caption(
                f"Not offered to start from: {names}. A model keeps its direction when fine-tuned, and this "
                f"corpus is from {name_of(pair[0])} into {name_of(pair[1])}."
            )
    labels = ["random weights (a new model)", *(c.label for c in models)]
    shipped = shipped_of(pair) if pair is not None else None
    default = next((i + 1 for i, c in enumerate(models) if shipped is not None and c.path == shipped), 0)
    offer = (pair, tuple(labels))
    if back_from_another_page() and st.session_state.get(KEPT_START) in labels:
        st.session_state["init_from"] = labels.index(st.session_state[KEPT_START])
    elif st.session_state.get(KEPT_OFFER) != offer:  # a new corpus or list: start from the direction's default
        st.session_state["init_from"] = default
    st.session_state[KEPT_OFFER] = offer
    options, label = range(len(labels)), labels.__getitem__
    chosen = st.selectbox("Start from", options, key="init_from", format_func=label, help=START_HELP)
    st.session_state[KEPT_START] = labels[chosen]
    if chosen == 0:
        return []
    if shipped is not None and models[chosen - 1].path == shipped:  # why it is the default
        langs, score = languages(shipped), control.parent_score(shipped)
        start = f"starts from {score[0]:.1f} {score[1]}" if score else "starts from what it learned on the whole corpus"
        st.caption(
            f"Fine-tuning the shipped {langs.src} → {langs.tgt} model is the default: it {start}, while a new model "
            "from random weights reaches only a few BLEU on a few thousand pairs in the minutes a CPU gives it (with "
            "the small preset, the forecast compares the two for this corpus once measured)."
        )
    lr = st.number_input(
        "Learning rate (fine-tuning)",
        1e-6,
        control.MAX_FINETUNE_LR,
        control.FINETUNE_LR,
        format="%.1e",
        key="finetune_lr",
        help=LR_HELP,
    )
    try:
        return control.fine_tune_overrides(models[chosen - 1].path, float(lr))
    except control.JobError as err:
        return str(err)


def training_settings(runs_dir: Path, pair: tuple[str, str] | None) -> tuple[str, list[str], list[str], Path | str]:
    """The preset, its overrides (starting point, limits), those that shape the model (fine-tuning's: what a
    calibration depends on besides the preset), and the run directory (or why the name or settings cannot be used)."""
    preset = st.selectbox("Preset", control.list_presets(), key="preset", help=PRESET_HELP)
    config = control.read_preset(control.CONFIGS_DIR / f"{preset}.toml")
    shape = starting_point(runs_dir, pair)
    if shape and isinstance(shape, list):
        st.caption(
            f"Fine-tuning keeps the shape of the model it starts from (its layers, width and vocabulary): the preset "
            f"“{preset}” sets only how it trains (batch size, evaluations, limits)."
        )
    overrides = stopping_rules(preset, config.optim, config.run)
    name = st.text_input("Run name (letters, digits, - and _)", "my-run", key="run_name").strip()
    try:
        run_dir: Path | str = control.run_path(runs_dir, name)
    except control.JobError as err:
        run_dir = str(err)
    if isinstance(shape, str):
        refuse(
            "This model cannot be fine-tuned: its folder is incomplete or unreadable. Start from another one.", shape
        )
        run_dir, shape = "cannot fine-tune the chosen model", []
    elif isinstance(run_dir, Path) and control.taken(run_dir):
        run_dir = f"a run named {name!r} already exists: choose another name (or watch it below)"
        st.info(f"{run_dir[0].upper()}{run_dir[1:]}.")
    elif isinstance(run_dir, str):
        st.error(run_dir)
    return preset, [*shape, *overrides], shape, run_dir


def start_job(source: CorpusSource, preset: Path, overrides: list[str], run_dir: Path, made: Estimate | None) -> None:
    """Write the checked corpus (and the estimate shown) into the run directory and start training on it."""

    def stage() -> Path:
        corpus = write_corpus(source, control.read_preset(preset).data.clean, run_dir)
        if made is not None:
            save_estimate(run_dir, made)
        return corpus

    try:  # refused before anything is written, and a start that fails removes what it wrote
        pid = control.start_staged(run_dir, preset, stage, ["data.format=tsv", *overrides], owner=owner_token())
    except control.JobError as err:  # its messages are written for the page
        st.error(f"Not started: {err}")
        return
    except (CorpusError, OSError) as err:
        refuse("Not started: the corpus could not be written into the run's folder.", str(err))
        return
    st.session_state["watch_run"] = run_dir.name
    st.success(f"Started run {run_dir.name!r} (process {pid}). It keeps training if you close this tab.")


def start_section(runs_dir: Path, corpus: Corpus | str) -> None:
    """Settings, then (for a checked corpus) the split and the estimate, then Start."""
    name, overrides, shape, run_dir = training_settings(runs_dir, corpus.langs if isinstance(corpus, Corpus) else None)
    preset = control.CONFIGS_DIR / f"{name}.toml"
    blockers, made = [b for b in (corpus, run_dir) if isinstance(b, str)], None
    if isinstance(corpus, Corpus):
        overrides = [f"data.src_lang={corpus.langs[0]}", f"data.tgt_lang={corpus.langs[1]}", *overrides]
        try:
            config = control.read_preset(preset, overrides)
        except control.JobError as err:
            blockers.append(str(err))
        else:
            if sized := dev_override(corpus.check.kept, config):  # the preset's dev set is too small to judge it
                overrides += sized
                config = control.read_preset(preset, overrides)
            dev, test = split_sizes(corpus.check.kept, config)
            st.caption(
                f"The run holds out {dev:,} dev sentences to judge itself while it trains (at least {DEV_FLOOR}, or "
                f"{DEV_SHARE:.0%} of the corpus when that is fewer) and {test:,} test sentences to score the result."
            )
            made = show_estimate(runs_dir, corpus.source, corpus.check, config, preset, shape)
            if made is not None and made.eval_every != config.run.eval_every:
                st.caption(
                    f"Dev evaluations every {made.eval_every:,} steps: the preset's {config.run.eval_every:,} would "
                    f"leave fewer than {MIN_EVALS} in this run, and the verdict needs {MIN_EVALS}."
                )
                overrides += [f"run.eval_every={made.eval_every}"]
    if st.button("Start training", key="start", type="primary", disabled=bool(blockers)):
        start_job(corpus.source, preset, overrides, run_dir, made)
    if blockers:
        st.caption("Start is disabled: " + "; ".join(blockers) + ".")
