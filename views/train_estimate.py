"""The Train page's estimate before Start (measured on this machine), and after the run beside what happened."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from jobs.control import JobError
from jobs.corpus_check import CorpusCheck, CorpusError, CorpusSource, write_corpus
from jobs.estimate import (
    Calibration,
    Estimate,
    EstimateError,
    calibrate,
    calibration_key,
    estimate,
    outcome,
    stored_calibration,
)
from jobs.run_progress import read_json
from jobs.uploads import STAGING_DIR
from model.run_dir import ESTIMATE_FILE
from views.refusal import refuse
from views.train_forecast import show_forecast, start_mode

if TYPE_CHECKING:  # the app reads a preset through jobs.control and never runs training code itself
    from training.train_config import TrainConfig


def duration(seconds: float) -> str:
    """``1h 05m``, ``3m 07s``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def measured(
    runs_dir: Path, source: CorpusSource, config: TrainConfig, preset: Path, shape: list[str]
) -> Calibration | None:
    """The stored calibration for this preset, corpus and machine; measured now when the user asks."""
    c = config.data.clean
    corpus_id = repr((source, (c.min_tokens, c.max_tokens, c.max_ratio)))
    key = calibration_key(preset, shape, corpus_id)
    cal = stored_calibration(runs_dir, key, time.time())
    label = "Measure again" if cal else "Measure on this machine"
    if not st.button(label, key="measure", help="Times a few real training steps of this preset on your corpus"):
        return cal
    try:
        with st.spinner("Timing a few real training steps on a sample of your corpus…"):
            corpus = write_corpus(source, c, runs_dir / STAGING_DIR / f"estimate-{key}")
            return calibrate(runs_dir, key, preset, corpus, shape)
    except (EstimateError, CorpusError, JobError, OSError) as err:
        refuse(
            "No estimate: timing a few training steps of this preset on your corpus did not work on this machine. "
            "Try “Measure on this machine” again, or start without an estimate.",
            str(err),
        )
        return None


def show_estimate(
    runs_dir: Path, source: CorpusSource, check: CorpusCheck, config: TrainConfig, preset: Path, shape: list[str]
) -> Estimate | None:
    """The estimate for the chosen limits (recomputed at once when they change), None before a measurement."""
    st.markdown("**Estimate before you start**")
    cal = measured(runs_dir, source, config, preset, shape)
    if cal is None:
        st.caption("No estimate yet: “Measure on this machine” times a few real steps of this preset (seconds).")
        return None
    made = estimate(check.kept, config, cal, time.time())
    a, b, c, d = st.columns(4)
    a.metric(
        "Pairs · pieces",
        f"{made.pairs:,} · {made.tokens:,}",
        help="after cleaning; subword pieces of the training pairs, both sides",
    )
    b.metric("Steps per epoch", f"{made.steps_per_epoch:,}", help=f"{made.seconds_per_step:.3f} s per step here")
    c.metric("Epochs the limits allow", f"{made.epochs:,.1f}", help=f"{made.steps:,} steps; first limit: {made.limit}")
    d.metric("Peak memory", f"{made.peak_memory_mb:,.0f} MiB", help=f"measured on {cal.device}")
    finish = time.strftime("%H:%M", time.localtime(made.finish_at))
    st.caption(
        f"About {duration(made.total_seconds)} in all (training {duration(made.train_seconds)}, with "
        f"{made.evaluations} dev evaluations), finishing near {finish}; the limit reached first: {made.limit}. "
        f"Measured {duration(time.time() - cal.measured_at)} ago; early stopping may end the run sooner."
    )
    langs = (config.data.src_lang, config.data.tgt_lang)
    show_forecast(made.pairs, made.steps, start_mode(shape), preset.stem, langs)
    return made


def show_outcome(run_dir: Path) -> None:
    """The estimate a run started with beside what it did (nothing when it had none)."""
    made, done = read_json(run_dir / ESTIMATE_FILE), outcome(run_dir)
    if made is None or done is None:
        return
    rows = [
        ("steps", f"{made.get('steps', 0):,}", f"{done.steps:,}"),
        (
            "seconds per step (with evaluations)",
            f"{made.get('train_seconds', 0) / max(1, made.get('steps', 1)):.3f}",
            f"{done.train_seconds / done.steps:.3f}" if done.steps and done.train_seconds else "–",
        ),
        ("training time", duration(made.get("train_seconds", 0)), duration(done.train_seconds)),
        (
            "start to finish",
            duration(made.get("total_seconds", 0)),
            duration(done.total_seconds) if done.total_seconds is not None else "–",
        ),
    ]
    st.markdown("**Estimate and what happened**")
    st.dataframe(pd.DataFrame(rows, columns=["", "estimated", "actual"]), hide_index=True)
