"""Is my run good? A plain-language line from its metrics (``verdict``, pure: shown above the live charts), its dev
score beside reference points, and the test scores of a stopped run's best checkpoint; both scored when the page
asks, each in its own process (``python -m training.reference_points``, ``python -m training evaluate``).

"Use as default model": may the run be the model the Translate page opens with for its direction? Judged on the
reference points against the current default (a first model of a direction: against copying the source), and on
the direction's canary sentences ("Hola mundo") where the lab has them. The shipped model's stricter gate:
``python -m workshop gate``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jobs.launch import run_tool
from jobs.run_progress import latest_records, read_json
from model.run_dir import BEST_DIR, EVAL_RECORD, STOPPED_SCORES_FILE, TRAIN_RECORD, WEIGHTS_FILE, split_file
from training.checkpoint import snapshot_step
from training.reference_points import DEFAULT, FLOOR, REFERENCES_FILE, RUN
from translate.model_dir import weights_dir

TOLERANCE = 0.005  # a dev-loss change under 0.5 % is no change
FLAT_EVALS = 3  # evaluations without a real change: flat
NOISE_SES = 2.0  # a rise in dev loss counts when over twice the dev set's standard error (about 95 % one-sided)
TOLERANCE_BLEU = 0.3  # dev BLEU a run may lose against the current default (the gate's)
EXTRA_LOOPS = 5  # dev outputs that loop, beyond the current default's
ABOVE_FLOOR = 1.0  # dev BLEU a first model of its direction must add to copying the source
LOOP_SHARE = 0.05  # a first model's dev outputs that may loop
TIMEOUT_S, STOPPED_TIMEOUT_S = 300.0, 600.0  # a scoring process is killed after this

Kind = Literal["early", "improving", "overfitting", "flat", "worse"]


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    text: str


@dataclass(frozen=True)
class Check:  # one check of the default-model rule
    name: str
    run: float
    baseline: float | None  # the current default's figure (or the floor's); None: nothing to compare
    passed: bool
    rule: str
    wrong: tuple[str, ...] = ()  # the sentences behind a failed check, as the run translated them


def _numbers(records: Sequence[Mapping[str, Any]], kind: str, field: str) -> list[tuple[int, float]]:
    stepped = [r for r in records if isinstance(r.get("step"), int)]
    return [
        (r["step"], float(r[field]))
        for r in latest_records(stepped)
        if r.get("kind") == kind and isinstance(r.get(field), int | float) and math.isfinite(r[field])
    ]


def verdict(records: Sequence[Mapping[str, Any]]) -> Verdict:
    """What the curves say, in words a newcomer can act on (dev loss and BLEU against the train loss). "Over-fitting"
    (and "worse") need the dev loss to have risen from its best by more than TOLERANCE and the dev set's noise:
    NOISE_SES × the standard error of the mean per-sentence dev loss (``dev_loss_se``, from every dev sentence's loss);
    a smaller rise is read as no change."""
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
    """The run's dev BLEU against copying the source (the floor) and the direction's default, in a sentence or two;
    ``shipped`` names the direction's shipped model ("the shipped English → Spanish model"), "" when there is none."""
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


def reference_points(run_dir: Path, default: Path | None) -> dict[str, Any] | None:
    """The run's reference points when scored for its weights beside ``default`` (None or the run: none); else None."""
    path, wanted = run_dir / REFERENCES_FILE, None if default in (None, run_dir) else str(default.resolve())
    data = read_json(path) if fresh(path, run_dir) else None
    return data if data and isinstance(data.get("scores"), dict) and data.get("default") == wanted else None


def score_reference_points(run_dir: Path, default: Path | None) -> str | None:
    """Score them beside ``default`` (None: the direction has none yet); None when done, else why not."""
    beside = ["--default", str(default)] if default is not None else ["--no-default"]
    return run_tool(["training.reference_points", "--run", str(run_dir), *beside], TIMEOUT_S)


# ----------------------------------------------------------------------------------------- the default model


def default_checks(points: Mapping[str, Any]) -> list[Check]:
    """Each check of the rule on a run's reference points (their JSON)."""
    scores, n = points["scores"], int(points.get("sentences") or 0)
    run = scores[RUN]
    default = next((row for name, row in scores.items() if name.startswith(DEFAULT)), None)
    if default is not None:
        bleu_rule, bleu_ok = f">= default - {TOLERANCE_BLEU}", run["bleu"] >= default["bleu"] - TOLERANCE_BLEU
        loop_rule, loop_ok = f"<= default + {EXTRA_LOOPS}", run["loops"] <= default["loops"] + EXTRA_LOOPS
        checks = [
            Check("dev BLEU", run["bleu"], default["bleu"], bleu_ok, bleu_rule),
            Check("dev outputs that loop", run["loops"], default["loops"], loop_ok, loop_rule),
        ]
    else:
        floor, most = scores[FLOOR]["bleu"], int(LOOP_SHARE * n)
        bleu_ok = run["bleu"] >= floor + ABOVE_FLOOR
        checks = [
            Check("dev BLEU", run["bleu"], floor, bleu_ok, f">= copy the source + {ABOVE_FLOOR}"),
            Check("dev outputs that loop", run["loops"], None, run["loops"] <= most, f"<= {most} of {n}"),
        ]
    if points.get("canaries"):
        total = int(points["canaries"])
        checks.append(
            Check(
                "canaries right",
                run["canaries"],
                None if default is None else default.get("canaries"),
                run["canaries"] == total,
                f"all {total}",
                tuple(run.get("canaries_wrong") or ()),
            )
        )
    return checks


def refusal_text(checks: list[Check], first: bool) -> str:
    """Why the rule refused, in two sentences a person reads."""
    failed = ", ".join(c.name for c in checks if not c.passed)
    if first:
        why = f"This run is not yet good enough to be the first default of its direction ({failed})"
        stays = "the Translate page keeps its default"
    else:
        why = f"The current default still does better on {failed}"
        stays = "it stays the default"
    return f"{why}, so {stays}. You can still pick this run on the Translate page."


# ----------------------------------------------------------------------------------------- a stopped run


def checkpoint_step(run_dir: Path, records: list[dict[str, Any]]) -> int | None:
    """The step of a stopped run's checkpoint: best/'s (the lowest dev loss), or the snapshot's; None for neither."""
    folder = weights_dir(run_dir)
    if folder.name == BEST_DIR:
        evals = [r for r in latest_records(records) if r.get("kind") == EVAL_RECORD and "dev_loss" in r]
        return min(evals, key=lambda r: r["dev_loss"])["step"] if evals else None
    return snapshot_step(folder) if folder != run_dir else None


def fresh(scores: Path, run_dir: Path) -> bool:
    """True when ``scores`` was written after the weights it scored: a resumed run writes new ones."""
    weights = weights_dir(run_dir) / WEIGHTS_FILE
    try:
        return not weights.is_file() or scores.stat().st_mtime_ns >= weights.stat().st_mtime_ns
    except OSError:
        return False


def stopped_scores(run_dir: Path) -> dict[str, Any] | None:
    """The test scores of the stopped run's checkpoint (BLEU, chrF, signatures), None before or once stale."""
    path = run_dir / STOPPED_SCORES_FILE
    data = read_json(path)
    return data if data is not None and isinstance(data.get("bleu"), int | float) and fresh(path, run_dir) else None


def score_stopped(run_dir: Path) -> str | None:
    """Score the checkpoint on the run's test split (greedy, as written); None when done, else why not."""
    test, out = split_file(run_dir, "test"), run_dir / STOPPED_SCORES_FILE
    args = ["training", "evaluate", "--model", str(run_dir), "--pairs", str(test), "--no-typed", "--device", "cpu"]
    return run_tool([*args, "--json", str(out)], STOPPED_TIMEOUT_S)
