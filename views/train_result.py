"""The Train page's result of a run: the test scores of a finished run (or, when asked, of a stopped run's best
checkpoint), the estimate beside what happened, the reference points, and how to use the model: pick it on the
Translate page, or make it the default of its direction (``jobs.run_verdict``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from jobs import run_verdict
from jobs.run_progress import final_scores, kept_text
from lab.page.direction import languages
from lab.page.model_choices import direction_default, is_usable, last_step, record_default, shipped_of, stopped_label
from views.compare_tab import ask
from views.refusal import refuse
from views.train_estimate import show_outcome


def show_scores(scores: dict[str, Any], which: str = "greedy") -> None:
    """Test BLEU and chrF side by side; ``which`` says how (and from which step) they were translated."""
    a, b = st.columns(2)
    a.metric(f"Test BLEU ({which})", f"{scores.get('bleu', float('nan')):.2f}")
    b.metric(f"Test chrF ({which})", f"{scores.get('chrf', float('nan')):.2f}")


def show_result(run_dir: Path) -> None:
    """A finished run: its scores, the estimate beside what happened, the reference points, and how to use it."""
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
    default = current_default(run_dir)
    if default not in (None, run_dir) and st.button(
        "Compare with the default",
        key="compare_default",
        help=f"The Translate page with the default ({default.name}) as A and this run as B, side by side",
    ):
        ask(default, run_dir)
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


def current_default(run_dir: Path) -> Path | None:
    """The default model of the run's direction (the run itself once it is); None for a first model of it."""
    mine = languages(run_dir)
    return direction_default(run_dir.parent, mine.pair, shipped_of(mine.pair)) if mine.known else None


def show_reference_points(run_dir: Path) -> None:
    """The run's dev score beside a floor (the source copied) and its direction's default, scored when asked."""
    default = current_default(run_dir)
    points = run_verdict.reference_points(run_dir, default)
    if points is None:
        scored_when_asked(
            "Compare with reference points",
            "references",
            "The same dev sentences translated by this model and by the default model of its direction, and copied "
            "unchanged (the floor)",
            "Translating the dev sentences with each model…",
            lambda: run_verdict.score_reference_points(run_dir, default),
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
    mine = languages(run_dir)
    shipped = f"the shipped {mine.src} → {mine.tgt} model" if mine.known and shipped_of(mine.pair) else ""
    st.markdown(run_verdict.reference_summary(scores, shipped))
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def show_stopped(run_dir: Path, records: list[dict]) -> None:
    """A run stopped before its end: its best checkpoint so far is a model, scored on the test split when asked."""
    step, best = last_step(run_dir), run_verdict.checkpoint_step(run_dir, records)
    if not is_usable(run_dir) or best is None:
        st.caption("It stopped before its first checkpoint, so there is no model to use yet.")
        return
    st.info(
        f"Stopped at step {step:,}, before its limits. Its best checkpoint so far (step {best:,}) is a model you can "
        f"use: score it here, pick “{stopped_label(run_dir.name, step)}” on the Translate page, or resume training."
    )
    scores = run_verdict.stopped_scores(run_dir)
    if scores is None:
        scored_when_asked(
            "Score the best checkpoint",
            "score_stopped",
            "Translates the run's held-out test sentences with it (greedy) and scores them",
            "Translating the test sentences…",
            lambda: run_verdict.score_stopped(run_dir),
            "No scores: the checkpoint could not translate this run's test sentences.",
        )
        return
    show_scores(scores, f"greedy, step {best:,}")
    st.caption("Scored from the best checkpoint; resuming the run makes new ones.")
    show_reference_points(run_dir)
    default_model_gate(run_dir)


def figure(value: float | None) -> str:
    """A check's figure as the table prints it: "57.86", "3"; "–" where the baseline has none to compare."""
    return "–" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.2f}"


def default_model_gate(run_dir: Path) -> None:
    """ "Use as default model": the run against its direction's default (or copying the source) by the rule."""
    mine, default = languages(run_dir), current_default(run_dir)
    if default == run_dir:
        st.caption(f"This run is the default {mine.src} → {mine.tgt} model of the Translate page.")
        return
    if not mine.known:
        st.caption("This run does not record its languages, so it cannot become a default model.")
        return
    against = (
        f"the current {mine.src} → {mine.tgt} default ({default.name})"
        if default is not None
        else f"copying the source (there is no {mine.src} → {mine.tgt} default yet)"
    )
    if not st.button(
        "Use as default model",
        key="make_default",
        help=f"Compares this run with {against} on its dev sentences, then makes it the model the Translate page "
        "opens with",
    ):
        return
    points = run_verdict.reference_points(run_dir, default)
    if points is None:
        with st.spinner("Translating the dev sentences with each model…"):
            problem = run_verdict.score_reference_points(run_dir, default)
        points = run_verdict.reference_points(run_dir, default)
        if problem or points is None:
            refuse("The comparison could not run, so the default is unchanged.", problem or "no reference points")
            return
    checks = run_verdict.default_checks(points)
    baseline = "current default" if default is not None else "copy the source"
    table = [
        {"check": c.name, "this run": figure(c.run), baseline: figure(c.baseline), "rule": c.rule, "passed": c.passed}
        for c in checks
    ]
    st.dataframe(pd.DataFrame(table), hide_index=True)
    wrong = [{"check": c.name, "what this run said": line} for c in checks if not c.passed for line in c.wrong]
    if wrong:
        st.dataframe(pd.DataFrame(wrong), hide_index=True)
    if all(c.passed for c in checks):
        record_default(run_dir.parent, run_dir)
        st.success(f"Passed: “run: {run_dir.name}” is now the default {mine.src} → {mine.tgt} model.")
    else:
        refuse(
            run_verdict.refusal_text(checks, default is None),
            f"compared on the first {points['sentences']} dev sentences",
        )
