""" "Use as default model" on the Train page: the regression gate (``python -m workshop gate``, the same as the
command line's) against the shipped model, in its own process; its figures are kept in the run folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.control import run_tool
from jobs.run_progress import read_json

GATE_FILE = "gate.json"  # in the run folder: the checks of the last gate run
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class GateOutcome:
    passed: bool
    checks: list[dict[str, Any]]  # name, candidate, baseline, passed, rule
    problem: str = ""  # why the gate could not run (then it did not pass)


def refusal_text(outcome: GateOutcome) -> str:
    """Why the gate refused, in two sentences a person reads (the gate's own words go in the page's details)."""
    if outcome.problem:
        why = (
            "The check could not compare this run with the shipped model (they were not trained and scored on the "
            "same held-out sentences, or one of them could not be loaded)"
        )
    else:
        failed = [str(c.get("name")) for c in outcome.checks if not c.get("passed")]
        why = f"The shipped model still does better on {', '.join(failed) or 'the checks above'}"
    return f"{why}, so the shipped model stays the default. You can still pick this run on the Translate page."


def run_gate(run_dir: Path, baseline: Path, timeout_s: float = TIMEOUT_S) -> GateOutcome:
    """Run the gate on ``run_dir`` against ``baseline``; a run that cannot be compared does not pass."""
    out = run_dir / GATE_FILE
    out.unlink(missing_ok=True)
    argv = ["workshop", "gate", "--candidate", str(run_dir), "--baseline", str(baseline), "--json", str(out)]
    code, last = run_tool(argv, timeout_s)
    data = read_json(out)
    checks = data.get("checks") if data else None
    if code not in (0, 1) or not isinstance(checks, list):
        return GateOutcome(False, [], last)
    return GateOutcome(code == 0 and data.get("passed") is True, [c for c in checks if isinstance(c, dict)])
