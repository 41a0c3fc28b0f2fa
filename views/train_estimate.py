"""The Train page's estimate before Start (measured on this machine) with the forecast of the dev BLEU its limits may
reach, in two sentences; and after the run, the estimate beside what happened."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from data.languages import name_of
from jobs.control import CONFIGS_DIR, JobError, parent_score, read_preset
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
from jobs.forecast import SHIPPED, SMOKE_RUN, ForecastError, Table, forecast, load_table
from jobs.run_progress import read_json
from jobs.uploads import STAGING_DIR
from lab.page.model_choices import other_shipped, shipped_of
from model.run_dir import ESTIMATE_FILE
from translate.translator import DEFAULT_MODEL
from views.refusal import refuse

if TYPE_CHECKING:  # the app reads a preset through jobs.control and never runs training code itself
    from training.train_config import TrainConfig

_table = st.cache_data(show_spinner=False)(load_table)  # the learning curves, read once per server


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
    try:  # the forecast beside the estimate
        st.caption(forecast_sentences(made.pairs, made.steps, start_mode(shape), preset.stem, langs, _table()))
    except ForecastError as err:
        st.caption(f"No forecast: {err}")
    return made


def bleu_words(bleu: float, low: float, high: float) -> str:
    """ "about 12 dev BLEU (6–27)"; under 1 BLEU in words, never "about 0 dev BLEU (0–0)"."""
    if high < 1:
        return "under 1 dev BLEU (next to nothing)"
    if bleu < 1:
        return f"under 1 dev BLEU (at most about {high:.0f})"
    return f"about {bleu:.0f} dev BLEU ({low:.0f}–{high:.0f})"


def no_curve(preset: str, table: Table) -> str:
    """What the page says of a preset the curves never trained from scratch: tiny's measured run, or no curve."""
    if preset not in SMOKE_RUN:
        return (
            f"No forecast for a “{preset}” model from scratch: the learning curves trained the “{table.preset}” "
            "preset's model only. Pick it, or fine-tune a shipped model, to see one."
        )
    pairs, steps, best = SMOKE_RUN[preset]
    c = read_preset(CONFIGS_DIR / f"{preset}.toml")
    return (
        f"Forecast: under 1 dev BLEU (next to nothing). The “{preset}” preset is a smoke test: its model "
        f"({c.model.n_encoder_layers} + {c.model.n_decoder_layers} layers {c.model.d_model} wide, "
        f"{c.data.vocab_size} pieces) measured at most {best:g} dev BLEU at every evaluation to {steps:,} steps on "
        f"{pairs:,} Tatoeba pairs. It shows that training runs, not what a model learns: pick “{table.preset}” or "
        "fine-tune a shipped model for that."
    )


def forecast_sentences(
    pairs: int, steps: int, mode: str | None, preset: str, langs: tuple[str, str], table: Table
) -> str:
    """The forecast, where it reaches beyond the table, and (when poor) what would do better, in plain words; or why
    there is none. Fine-tuning a shipped model of another direction reads the fine-tune curve scaled to its BLEU."""
    if mode is None:
        return "No forecast: the learning curves were measured from scratch and from the shipped models only."
    if preset != table.preset and mode == "scratch":
        return no_curve(preset, table)
    read, through = steps, ""
    if preset != table.preset:  # fine-tuning keeps the parent's shape: the preset sets only its batches and limits
        ours, theirs = (read_preset(CONFIGS_DIR / f"{p}.toml").optim.max_tokens for p in (preset, table.preset))
        read = max(1, round(steps * ours / theirs))
        through = f", read as {read:,} of the curves' {theirs:,}-token batches (“{preset}” takes {ours:,})"
    made, direction = forecast(pairs, read, mode, *langs, table), f"{name_of(langs[0])} → {name_of(langs[1])}"
    shipped = shipped_of(langs)
    own = parent_score(shipped) if shipped is not None else None
    scale, scaled = 1.0, ""
    if mode == "finetune" and langs != SHIPPED:
        measured_on = parent_score(DEFAULT_MODEL)
        if own is None or measured_on is None or own[1] != measured_on[1]:
            return (
                "No forecast: the fine-tune curve was measured on the shipped model from Spanish into English, and "
                "this one records no BLEU to scale it by."
            )
        scale = own[0] / measured_on[0]
        scaled = f" (the curve of the model from Spanish into English, scaled to this one's {own[0]:.1f} {own[1]})"
    start = f"fine-tuning the shipped {direction} model{scaled}" if mode == "finetune" else "from scratch"
    text = (
        f"Forecast: {bleu_words(scale * made.bleu, scale * made.low, scale * made.high)} at its best evaluation in "
        f"{steps:,} steps on {pairs:,} pairs {start}{through}, read from learning curves measured on the bundled "
        "Tatoeba corpus (short everyday sentences: harder text scores lower). The run keeps the checkpoint of lowest "
        "dev loss: on a few thousand pairs it can come before the best BLEU and score well below it."
    )
    if made.beyond:
        text += f" It reaches beyond what was measured ({'; and '.join(made.beyond)}), so it is a guess."
    if mode == "finetune" and own is not None:
        scratch = forecast(pairs, steps, "scratch", *langs, table).bleu
        text += (
            f" Why fine-tuning is the default: from scratch, {pairs:,} pairs reach about {scratch:.0f} BLEU in as "
            f"many steps; fine-tuning the shipped {direction} model starts from {own[0]:.1f} {own[1]}."
        )
    elif mode == "scratch" and own is not None and langs != SHIPPED:  # the table's advice knows only its own
        text += f" Likely to do better: fine-tune the shipped {direction} model (it starts from {own[0]:.1f} {own[1]})."
    elif made.advice:
        text += f" Likely to do better: {'; or '.join(made.advice)}."
    return text


def start_mode(overrides: list[str]) -> str | None:
    """ "scratch", "finetune" from a shipped model, or None from another model (no curve measured for it)."""
    parents = [o.split("=", 1)[1] for o in overrides if o.startswith("run.init_from=")]
    if not parents:
        return "scratch"
    shipped = {p.resolve() for p in (DEFAULT_MODEL, *other_shipped())}
    return "finetune" if Path(parents[-1]).resolve() in shipped else None


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
