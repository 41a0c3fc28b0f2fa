"""The Train page's forecast before Start: the dev BLEU the limits can be expected to reach, in two sentences."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from data.languages import name_of
from jobs.fine_tune import parent_score
from jobs.forecast import SHIPPED, ForecastError, Table, forecast, load_table
from lab.page.model_choices import other_shipped, shipped_of
from translate.translator import DEFAULT_MODEL


@st.cache_data(show_spinner=False)
def _table() -> Table:
    return load_table()


def forecast_sentences(
    pairs: int, steps: int, mode: str | None, preset: str, langs: tuple[str, str], table: Table
) -> str:
    """The forecast, where it reaches beyond the table, and (when poor) what would do better, in plain words; or
    why there is none (``mode`` None: from a model other than a shipped one; a preset the table did not use).
    Fine-tuning a shipped model of another direction than the curve's reads the fine-tune curve scaled to that
    model's own BLEU, and says so."""
    if mode is None:
        return "No forecast: the learning curves were measured from scratch and from the shipped models only."
    if preset != table.preset:
        return (
            f"No forecast for the “{preset}” preset: the learning curves were measured with “{table.preset}”; pick it "
            "to see what this corpus and these limits can be expected to reach."
        )
    made, direction = forecast(pairs, steps, mode, *langs, table), f"{name_of(langs[0])} → {name_of(langs[1])}"
    shipped = shipped_of(langs)
    own = parent_score(shipped) if shipped is not None else None
    scale, scaled = 1.0, ""
    if mode == "finetune" and langs != SHIPPED:
        measured_on = parent_score(DEFAULT_MODEL)
        if own is None or measured_on is None or own[1] != measured_on[1]:
            return "No forecast: the fine-tune curve was measured on the Spanish → English model, and this one records no BLEU to scale it by."
        scale = own[0] / measured_on[0]
        scaled = f" (the fine-tune curve of the Spanish → English model, scaled to this model's {own[0]:.1f} {own[1]})"
    start = f"fine-tuning the shipped {direction} model{scaled}" if mode == "finetune" else "from scratch"
    text = (
        f"Forecast: about {scale * made.bleu:.0f} dev BLEU ({scale * made.low:.0f}–{scale * made.high:.0f}) at its "
        f"best evaluation in {steps:,} steps on {pairs:,} pairs {start}, read from learning curves measured on the "
        "bundled Tatoeba corpus (short everyday sentences: harder text scores lower). The run keeps the checkpoint "
        "of lowest dev loss: on a few thousand pairs it can come before the best BLEU and score well below it."
    )
    if made.beyond:
        text += f" That is beyond what was measured ({'; '.join(made.beyond)}): a guess."
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
