"""Is my loss good? A plain-language line from a run's metrics, and its score beside reference points.

``verdict`` is a pure function of metrics.jsonl's records: the page shows its line above the live charts. The
reference points (``python -m training.reference_points``) are scored on request, in their own process."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jobs.launch import run_tool
from jobs.run_progress import latest_records, read_json
from model.run_dir import EVAL_RECORD, TRAIN_RECORD
from training.reference_points import DEFAULT, FLOOR, REFERENCES_FILE, RUN

TOLERANCE = 0.005  # a dev-loss change under 0.5 % is no change
FLAT_EVALS = 3  # evaluations without a real change: flat
NOISE_SES = 2.0  # a rise in dev loss counts when over twice the dev set's standard error (about 95 % one-sided)
TIMEOUT_S = 300.0

Kind = Literal["early", "improving", "overfitting", "flat", "worse"]


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    text: str


def _numbers(records: Sequence[Mapping[str, Any]], kind: str, field: str) -> list[tuple[int, float]]:
    stepped = [r for r in records if isinstance(r.get("step"), int)]
    return [
        (r["step"], float(r[field]))
        for r in latest_records(stepped)
        if r.get("kind") == kind and isinstance(r.get(field), int | float) and math.isfinite(r[field])
    ]


def verdict(records: Sequence[Mapping[str, Any]]) -> Verdict:
    """What the curves say, in words a newcomer can act on (dev loss and BLEU against the train loss).

    "Over-fitting" (and "worse") need the dev loss to have risen from its best by more than the dev set's noise:
    NOISE_SES × the standard error of the mean per-sentence dev loss (``dev_loss_se``, which training computes from
    every dev sentence's loss), and by more than TOLERANCE; a smaller rise is read as no change."""
    dev = _numbers(records, EVAL_RECORD, "dev_loss")
    if len(dev) < 2:
        return Verdict("early", "Too early to tell: the verdict needs two dev evaluations.")
    bleu = _numbers(records, EVAL_RECORD, "dev_bleu")
    train = _numbers(records, TRAIN_RECORD, "loss")
    best_step, best = min(dev, key=lambda item: item[1])
    last_step, last = dev[-1]
    if last < min(loss for _, loss in dev[:-1]) * (1 - TOLERANCE):
        if len(bleu) >= 2 and bleu[-1][1] > max(b for _, b in bleu[:-1]):
            return Verdict(
                "improving",
                f"Dev BLEU still rising ({bleu[-2][1]:.1f} → {bleu[-1][1]:.1f}) and dev "
                "loss still falling: training is still helping.",
            )
        return Verdict(
            "improving", f"Dev loss still falling ({dev[-2][1]:.3f} → {last:.3f}): training is still helping."
        )
    noise = NOISE_SES * dict(_numbers(records, EVAL_RECORD, "dev_loss_se")).get(last_step, 0.0)
    if last > best * (1 + TOLERANCE) and last - best <= noise and best_step < last_step:
        sentences = dict(_numbers(records, EVAL_RECORD, "dev_sentences")).get(last_step)
        on = f" on {sentences:,.0f} dev sentences" if sentences else ""
        text = (
            f"Dev loss up {last - best:.3f} from its best, within the noise of the dev set (±{noise:.3f}{on}): "
            "no sign yet of over-fitting; let it run, or add data."
        )
        return Verdict("flat", text)
    if last > best * (1 + TOLERANCE) and best_step < last_step:
        at_best = [loss for step, loss in train if step <= best_step]
        since = [loss for step, loss in train if step > best_step]
        if at_best and since and min(since) < at_best[-1]:
            return Verdict(
                "overfitting",
                f"Dev loss rising (best {best:.3f} at step {best_step:,}, now {last:.3f}) "
                "while train loss falls: over-fitting — stop, or add data.",
            )
        return Verdict(
            "worse",
            f"Dev loss rising (best {best:.3f} at step {best_step:,}, now {last:.3f}) and train "
            "loss not falling: the learning rate may be too high.",
        )
    recent = [loss for _, loss in dev[-FLAT_EVALS:]]
    return Verdict(
        "flat",
        f"Flat: dev loss has moved less than {TOLERANCE:.1%} over the last {len(recent)} "
        "evaluations — more steps will help little; more data or a bigger model may.",
    )


def reference_summary(scores: Mapping[str, Any], shipped: str = "") -> str:
    """One or two sentences on what the reference points say: the run's dev BLEU against copying the source
    unchanged (the floor) and against the direction's default model, when it was scored; ``shipped`` names the
    shipped model of the run's direction ("the shipped English → Spanish model"), "" when there is none."""
    bleu = {name: row.get("bleu") for name, row in scores.items() if isinstance(row, Mapping)}
    run, floor = bleu.get(RUN), bleu.get(FLOOR)
    default = next(((name, value) for name, value in bleu.items() if name.startswith(DEFAULT)), None)
    if not isinstance(run, int | float) or not isinstance(floor, int | float):
        return "The reference points could not all be scored: compare the rows below."
    if run <= floor:
        helps = f"More data, more minutes, or fine-tuning {shipped}" if shipped else "More data or more minutes"
        text = (
            f"This run ({run:.1f} BLEU) does no better than copying the source unchanged ({floor:.1f}): it has not "
            f"learned to translate yet. {helps} would help."
        )
    else:
        text = f"This run ({run:.1f} BLEU) translates better than copying the source unchanged ({floor:.1f})."
    if default is not None and isinstance(default[1], int | float) and run > floor:
        than = "better than" if run > default[1] else "below"
        text += f" It scores {than} the {default[0]}, {default[1]:.1f}, which may have trained on some of them."
    return text


def reference_points(run_dir: Path) -> dict[str, Any] | None:
    """The reference points scored for a run (``python -m training.reference_points``), None before."""
    data = read_json(run_dir / REFERENCES_FILE)
    return data if data is not None and isinstance(data.get("scores"), dict) else None


def score_reference_points(run_dir: Path, default: Path | None, timeout_s: float = TIMEOUT_S) -> str | None:
    """Score them in a separate process, beside ``default`` (the direction's default model; None: it has none yet);
    None when done, else why not (its last error line)."""
    beside = ["--default", str(default)] if default is not None else ["--no-default"]
    code, last = run_tool(["training.reference_points", "--run", str(run_dir), *beside], timeout_s)
    return None if code == 0 else last
