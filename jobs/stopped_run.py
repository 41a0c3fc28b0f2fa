"""A run stopped before its end is a model too: its best checkpoint so far (``translate.model_dir.weights_dir``),
scored on the run's own test split when the page asks (``python -m training evaluate``, in its own process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobs.launch import run_tool
from jobs.run_progress import latest_records, read_json
from model.run_dir import BEST_DIR, EVAL_RECORD, STOPPED_SCORES_FILE, WEIGHTS_FILE, split_file
from training.checkpoint import snapshot_step
from translate.model_dir import weights_dir

TIMEOUT_S = 600.0


def checkpoint_step(run_dir: Path, records: list[dict[str, Any]]) -> int | None:
    """The step of the checkpoint a stopped run is loaded from: best/'s (the lowest dev loss evaluated), or the
    snapshot's; None when the run has neither."""
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


def score_stopped(run_dir: Path, timeout_s: float = TIMEOUT_S) -> str | None:
    """Score the checkpoint on the run's test split (greedy, as written); None when done, else why not."""
    test, out = split_file(run_dir, "test"), run_dir / STOPPED_SCORES_FILE
    args = ["training", "evaluate", "--model", str(run_dir), "--pairs", str(test), "--no-typed", "--device", "cpu"]
    code, last = run_tool([*args, "--json", str(out)], timeout_s)
    return None if code == 0 else last
