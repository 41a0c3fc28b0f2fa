""" "Use as default model" on the Train page: may this run be the model the Translate page opens with, for its
direction? Judged on the reference points (``training.reference_points``: the run's own dev sentences, translated by
the run and by that direction's current default) against ``DefaultRule``; a first model of a direction, with no
default to beat, must beat copying the source. Where the lab has canary sentences for the direction ("Hola mundo"),
it must get every one right. Stricter checks before a model replaces the shipped one: ``python -m workshop gate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from training.reference_points import DEFAULT, FLOOR, RUN


@dataclass(frozen=True)
class DefaultRule:
    tolerance: float = 0.3  # dev BLEU the run may lose against the current default (the gate's)
    extra_loops: int = 5  # dev outputs that loop, beyond the current default's
    above_floor: float = 1.0  # dev BLEU a first model of its direction must add to copying the source
    loop_share: float = 0.05  # a first model's dev outputs that may loop


@dataclass(frozen=True)
class Check:
    name: str
    run: float
    baseline: float | None  # the current default's figure (or the floor's); None: nothing to compare
    passed: bool
    rule: str
    wrong: tuple[str, ...] = ()  # the sentences behind a failed check, as the run translated them


def default_checks(points: Mapping[str, Any], rule: DefaultRule = DefaultRule()) -> list[Check]:
    """Each check of the rule on a run's reference points (their JSON)."""
    scores, n = points["scores"], int(points.get("sentences") or 0)
    run = scores[RUN]
    default = next((row for name, row in scores.items() if name.startswith(DEFAULT)), None)
    if default is not None:
        bleu_rule, bleu_ok = f">= default - {rule.tolerance}", run["bleu"] >= default["bleu"] - rule.tolerance
        loop_rule, loop_ok = f"<= default + {rule.extra_loops}", run["loops"] <= default["loops"] + rule.extra_loops
        checks = [
            Check("dev BLEU", run["bleu"], default["bleu"], bleu_ok, bleu_rule),
            Check("dev outputs that loop", run["loops"], default["loops"], loop_ok, loop_rule),
        ]
    else:
        floor, most = scores[FLOOR]["bleu"], int(rule.loop_share * n)
        bleu_ok = run["bleu"] >= floor + rule.above_floor
        checks = [
            Check("dev BLEU", run["bleu"], floor, bleu_ok, f">= copy the source + {rule.above_floor}"),
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
