"""The Train page's result of a run: the test scores of a finished run (or, when asked, of a stopped run's best
checkpoint), the estimate beside what happened, the reference points, and how to use the model: pick it on the
Translate page, or make it the default there through the regression gate (``jobs.model_gate``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from jobs import model_gate
from jobs.run_progress import final_scores, kept_text
from jobs.run_verdict import reference_points, reference_summary, score_reference_points
from jobs.stopped_run import checkpoint_step, fresh, score_stopped, stopped_scores
from lab.page.direction import languages
from lab.page.model_choices import is_usable, last_step, record_default, recorded_default, shipped_model, stopped_label
from training.reference_points import REFERENCES_FILE
from views.refusal import refuse
from views.train_estimate import show_outcome


def show_scores(scores: dict[str, Any], which: str = "greedy") -> None:
    """Test BLEU and chrF side by side; ``which`` says how (and from which step) they were translated."""
    a, b = st.columns(2)
    a.metric(f"Test BLEU ({which})", f"{scores.get('bleu', float('nan')):.2f}")
    b.metric(f"Test chrF ({which})", f"{scores.get('chrf', float('nan')):.2f}")


def show_result(run_dir: Path) -> None:
    """A finished run: its scores with their signatures, the estimate beside what happened, the reference points,
    and the way to use it (the Translate page's picker; the gate for the default)."""
    scores = final_scores(run_dir)
    if scores is None:
        return
    show_scores(scores)
    st.code(f"BLEU {scores.get('bleu_signature', '?')}\nchrF {scores.get('chrf_signature', '?')}", language=None)
    if kept := kept_text(run_dir):
        st.caption(kept)
    show_outcome(run_dir)
    show_reference_points(run_dir)
    st.success(f"Pick “run: {run_dir.name}” in the model picker of the Translate page to use this model.")
    default_model_gate(run_dir)


def scored_when_asked(
    button: str, key: str, hint: str, doing: str, score: Callable[[], str | None], refusal: str
) -> None:
    """A button that scores in another process (``score`` returns why it could not, or None), then shows it."""
    if st.button(button, key=key, help=hint):
        with st.spinner(doing):
            problem = score()
        if problem:
            refuse(refusal, problem)
        else:
            st.rerun()


def show_reference_points(run_dir: Path) -> None:
    """The run's dev score beside a floor (the source copied), the shipped model and Apertium, scored when asked."""
    points = reference_points(run_dir) if fresh(run_dir / REFERENCES_FILE, run_dir) else None
    if points is None:
        scored_when_asked(
            "Compare with reference points",
            "references",
            "The same dev sentences translated by this model, by the shipped model and by Apertium (es→en, where "
            "installed), and copied unchanged (the floor)",
            "Translating the dev sentences with each model…",
            lambda: score_reference_points(run_dir, shipped_model()),
            "No reference points: the other models could not translate this run's dev sentences.",
        )
        return
    scores = points["scores"]
    rows = [
        {"model": k, "dev BLEU": v.get("bleu"), "dev chrF": v.get("chrf")}
        for k, v in scores.items()
        if isinstance(v, dict)
    ]
    st.markdown(f"**Reference points** (the first {points.get('sentences', '?')} dev sentences, greedy)")
    st.markdown(reference_summary(scores))
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
        scored_when_asked(
            "Score the best checkpoint",
            "score_stopped",
            "Translates the run's held-out test sentences with it (greedy) and scores them",
            "Translating the test sentences…",
            lambda: score_stopped(run_dir),
            "No scores: the checkpoint could not translate this run's test sentences.",
        )
        return
    show_scores(scores, f"greedy, step {best:,}")
    st.caption("Scored from the best checkpoint; resuming the run makes new ones.")
    show_reference_points(run_dir)
    default_model_gate(run_dir)


def default_model_gate(run_dir: Path) -> None:
    """The gate against the current default (the shipped model, or the run the gate made the default), for a run in
    the shipped model's direction; a refused run can still be picked on the Translate page."""
    runs_dir, current = run_dir.parent, recorded_default(run_dir.parent)
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
        result = model_gate.run_gate(run_dir, current or shipped_model())
    if result.checks:
        columns = {"name": "check", "candidate": "this run", "baseline": "shipped", "rule": "rule", "passed": "passed"}
        st.dataframe(pd.DataFrame([{v: c.get(k) for k, v in columns.items()} for c in result.checks]), hide_index=True)
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
        refuse(model_gate.refusal_text(result), result.problem or "the failed checks are marked in the table above")
