"""The Train page's settings: the preset, the starting point (random weights, or fine-tuning a finished model),
every limit that stops training, and the run's name; kept across a visit of another page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from data.languages import name_of
from jobs import control
from jobs.fine_tune import FINETUNE_LR, MAX_FINETUNE_LR, fine_tune_overrides
from lab.page.direction import languages
from lab.page.model_choices import find_models, other_shipped, shipped_model, shipped_of
from training import run_lock
from views.refusal import refuse

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


@dataclass(frozen=True)
class Settings:
    """What Start runs: the preset, its overrides (limits, fine-tuning), and those that shape the model."""

    preset: str
    overrides: list[str]
    shape: list[str]  # fine-tuning's: what a calibration of the preset depends on besides the preset


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
    models = [c for c in find_models(shipped_model(), runs_dir, also=other_shipped()) if c.available]
    models = [c for c in models if c.stopped_at is None]
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
    lr = st.number_input(
        "Learning rate (fine-tuning)",
        1e-6,
        MAX_FINETUNE_LR,
        FINETUNE_LR,
        format="%.1e",
        key="finetune_lr",
        help=LR_HELP,
    )
    try:
        return fine_tune_overrides(models[chosen - 1].path, float(lr))
    except control.JobError as err:
        return str(err)


def training_settings(runs_dir: Path, pair: tuple[str, str] | None) -> tuple[Settings, Path | str]:
    """Preset, starting point, limits, and the run directory (or why the name or the settings cannot be used)."""
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
    elif isinstance(run_dir, Path) and (control.holds_run(run_dir) or run_lock.holder(run_dir)):
        run_dir = f"a run named {name!r} already exists: choose another name (or watch it below)"
        st.info(f"{run_dir[0].upper()}{run_dir[1:]}.")
    elif isinstance(run_dir, str):
        st.error(run_dir)
    return Settings(preset, [*shape, *overrides], shape), run_dir
