"""The Train page's forecast before Start: the dev BLEU the limits can be expected to reach, in two sentences."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from data.languages import name_of
from jobs.control import CONFIGS_DIR, read_preset
from jobs.fine_tune import parent_score
from jobs.forecast import SHIPPED, SMOKE_RUN, ForecastError, Table, forecast, load_table
from lab.page.model_choices import other_shipped, shipped_of
from translate.translator import DEFAULT_MODEL


@st.cache_data(show_spinner=False)
def _table() -> Table:
    return load_table()


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


def show_forecast(pairs: int, steps: int, mode: str | None, preset: str, langs: tuple[str, str]) -> None:
    """The forecast beside the estimate; ``mode`` as ``start_mode`` says."""
    try:
        st.caption(forecast_sentences(pairs, steps, mode, preset, langs, _table()))
    except ForecastError as err:
        st.caption(f"No forecast: {err}")
