"""The Train page's second step: the settings, the split and the estimate for the checked corpus, and Start,
disabled (saying why) while something is missing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from jobs import control
from jobs.corpus_check import CorpusError, CorpusSource, write_corpus
from jobs.estimate import DEV_FLOOR, DEV_SHARE, MIN_EVALS, Estimate, dev_override, save_estimate, split_sizes
from views.refusal import refuse
from views.train_estimate import show_estimate
from views.train_report import Corpus
from views.train_run import owner_token
from views.train_settings import training_settings

if TYPE_CHECKING:  # the page reads presets through jobs.control
    from training.train_config import TrainConfig


def show_split(pairs: int, config: TrainConfig) -> None:
    """How many pairs the run holds out to judge itself (dev) and to score the result (test)."""
    dev, test = split_sizes(pairs, config)
    st.caption(
        f"The run holds out {dev:,} dev sentences to judge itself while it trains (at least {DEV_FLOOR}, or "
        f"{DEV_SHARE:.0%} of the corpus when that is fewer) and {test:,} test sentences to score the result."
    )


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
    settings, run_dir = training_settings(runs_dir, corpus.langs if isinstance(corpus, Corpus) else None)
    preset = control.CONFIGS_DIR / f"{settings.preset}.toml"
    blockers, overrides, made = [b for b in (corpus, run_dir) if isinstance(b, str)], settings.overrides, None
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
            show_split(corpus.check.kept, config)
            # The estimate before Start; a forecast of the score the run may reach belongs beside it.
            made = show_estimate(runs_dir, corpus.source, corpus.check, config, preset, settings.shape)
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
