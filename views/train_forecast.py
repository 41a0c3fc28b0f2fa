"""The Train page's forecast before Start: the dev BLEU the limits can be expected to reach, in two sentences."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from jobs.forecast import ForecastError, Table, forecast, load_table
from translate.translator import DEFAULT_MODEL


@st.cache_data(show_spinner=False)
def _table() -> Table:
    return load_table()


def forecast_sentences(
    pairs: int, steps: int, mode: str | None, preset: str, langs: tuple[str, str], table: Table
) -> str:
    """The forecast, where it reaches beyond the table, and (when poor) what would do better, in plain words; or
    why there is none (``mode`` None: from a model other than the shipped one; a preset the table did not use)."""
    if mode is None:
        return "No forecast: the learning curves were measured from scratch and from the shipped model only."
    if preset != table.preset:
        return (
            f"No forecast for the “{preset}” preset: the learning curves were measured with “{table.preset}”; pick it "
            "to see what this corpus and these limits can be expected to reach."
        )
    made = forecast(pairs, steps, mode, *langs, table)
    start = "fine-tuning the shipped model" if mode == "finetune" else "from scratch"
    text = (
        f"Forecast: about {made.bleu:.0f} dev BLEU ({made.low:.0f}–{made.high:.0f}) at its best evaluation in "
        f"{steps:,} steps on {pairs:,} pairs {start}, read from learning curves measured on the bundled Tatoeba corpus "
        "(short everyday sentences: harder text scores lower). The run keeps the checkpoint of lowest dev loss: on a "
        "few thousand pairs it can come before the best BLEU and score well below it."
    )
    if made.beyond:
        text += f" That is beyond what was measured ({'; '.join(made.beyond)}): a guess."
    if made.advice:
        text += f" Likely to do better: {'; or '.join(made.advice)}."
    return text


def start_mode(overrides: list[str]) -> str | None:
    """ "scratch", "finetune" from the shipped model, or None from another model (no curve measured for it)."""
    parents = [o.split("=", 1)[1] for o in overrides if o.startswith("run.init_from=")]
    if not parents:
        return "scratch"
    return "finetune" if Path(parents[-1]).resolve() == DEFAULT_MODEL.resolve() else None


def show_forecast(pairs: int, steps: int, mode: str | None, preset: str, langs: tuple[str, str]) -> None:
    """The forecast beside the estimate; ``mode`` as ``start_mode`` says."""
    try:
        st.caption(forecast_sentences(pairs, steps, mode, preset, langs, _table()))
    except ForecastError as err:
        st.caption(f"No forecast: {err}")
