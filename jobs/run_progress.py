"""How far a run is, read from its directory: metrics.jsonl, its budget in train_config.json, metrics.json, and the
probe sentences' attention it recorded at each dev evaluation (training/probes.py)."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from model.attention_maps import KINDS
from model.bounded_read import read_json as bounded_json
from model.bounded_read import read_text, regular_size
from model.run_dir import EVALUATING_FILE, METRICS_LOG_FILE, RESULT_FILE, TRAIN_CONFIG_FILE
from training.probes import PROBE_TOKENS_FILE, PROBES_DIR

MAX_JSONL_BYTES = 64 << 20  # metrics.jsonl or job.jsonl: a long run's is tens of kilobytes
OLD_REASON = re.compile(r"optim\.max_(step|minute|epoch)s = ([\d.,]+) reached")  # "optim.max_minutes = 7 reached"
PROBE_FILE = re.compile(r"step-(\d{8})\.npz")


@dataclass(frozen=True)
class Budget:
    """The limits training stops at, whichever comes first (``max_minutes`` 0 = no time limit)."""

    max_steps: int
    max_epochs: int
    max_minutes: float


@dataclass(frozen=True)
class RunProgress:
    step: int
    epoch: int
    elapsed_s: float
    tokens_per_s: float | None
    fraction: float  # 0..1 of the budget that binds first
    eta_s: float | None  # None until a rate is known
    limit: str  # which budget the fraction refers to, in words


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when missing, half-written, or not a regular file (read bounded)."""
    try:
        data = bounded_json(path, ValueError)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a one-object-per-line file; a line still being written (or cut by a crash) is skipped."""
    try:
        lines = read_text(path, MAX_JSONL_BYTES, ValueError).splitlines()  # a FIFO put there: no wait
    except ValueError:
        return []
    records = []
    for line in lines:
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    return [record for record in records if isinstance(record, dict)]


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of metrics.jsonl that names its step."""
    return [r for r in read_jsonl(run_dir / METRICS_LOG_FILE) if isinstance(r.get("step"), int)]


def latest_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (kind, step), the last written: steps replayed after a resume replace the ones before."""
    by_key = {(r.get("kind"), r["step"]): r for r in records}
    return sorted(by_key.values(), key=lambda r: (r["step"], str(r.get("kind"))))


def read_budget(run_dir: Path) -> Budget | None:
    """The run's limits from its saved configuration (rewritten on resume), None before training has begun."""
    config = read_json(run_dir / TRAIN_CONFIG_FILE)
    optim = config.get("optim") if config else None
    if not isinstance(optim, dict):
        return None
    return Budget(int(optim.get("max_steps", 0)), int(optim.get("max_epochs", 0)), float(optim.get("max_minutes", 0)))


def run_progress(records: list[dict[str, Any]], budget: Budget) -> RunProgress | None:
    """Progress and ETA from the last training record against each limit; the nearest limit wins."""
    train = [r for r in latest_records(records) if r.get("kind") == "train"]
    if not train:
        return None
    last = train[-1]
    step, epoch, elapsed = int(last["step"]), int(last.get("epoch", 0)), float(last.get("elapsed_s", 0.0))
    per_step = elapsed / step if step > 0 else None
    limits: list[tuple[float, float | None, str]] = []  # (fraction, eta, description)
    if budget.max_steps > 0:
        eta = (budget.max_steps - step) * per_step if per_step else None
        limits.append((step / budget.max_steps, eta, f"step {step} of {budget.max_steps}"))
    if budget.max_minutes > 0:
        total = budget.max_minutes * 60
        limits.append((elapsed / total, total - elapsed, f"{elapsed / 60:.1f} of {budget.max_minutes:g} minutes"))
    if budget.max_epochs > 0:  # the fraction of epochs done, where the record has it (else whole epochs)
        done = last.get("epochs_done", epoch)
        done = float(done) if isinstance(done, int | float) else float(epoch)
        eta = (budget.max_epochs - done) * elapsed / done if done > 0 else None
        limits.append((done / budget.max_epochs, eta, f"epoch {epoch + 1} of {budget.max_epochs}"))
    fraction, eta, limit = max(limits, key=lambda item: item[0]) if limits else (0.0, None, f"step {step}")
    etas = [e for _, e, _ in limits if e is not None]
    speed = last.get("tokens_per_s")
    return RunProgress(
        step=step,
        epoch=epoch,
        elapsed_s=elapsed,
        tokens_per_s=float(speed) if isinstance(speed, int | float) else None,
        fraction=min(1.0, max(0.0, fraction)),
        eta_s=max(0.0, min(etas)) if etas else None,
        limit=limit,
    )


def evaluating(run_dir: Path, records: list[dict[str, Any]]) -> tuple[float, str] | None:
    """How far the dev evaluation the run's EVALUATING_FILE says is running is, and that in words; None when none
    is: no file, or one older than the last train record (a stop cut it short; training goes on only after one)."""
    record = read_json(run_dir / EVALUATING_FILE)
    if record is None or record.get("task") not in ("loss", "bleu"):
        return None
    numbers = [record.get(k) for k in ("time", "step", "done", "total")]
    if not all(isinstance(n, int | float) for n in numbers):
        return None
    trained = [r["time"] for r in records if r.get("kind") == "train" and isinstance(r.get("time"), int | float)]
    if trained and max(trained) > numbers[0]:
        return None
    step, done, total = (int(n) for n in numbers[1:])
    if record["task"] == "bleu":
        text = f"Evaluating at step {step:,}: translating {total:,} dev sentences for BLEU… ({done:,} of {total:,})"
    else:
        text = f"Evaluating at step {step:,} on {total:,} dev sentences… ({done:,} of {total:,})"
    return done / max(1, total), text


def kept_text(run_dir: Path) -> str | None:
    """Which checkpoint became the model and why training stopped, in words; None before the run finished."""
    result = read_json(run_dir / RESULT_FILE)
    kept = result.get("kept") if result else None
    if not isinstance(kept, dict):
        return None
    last = kept.get("last_step", 0)
    if kept.get("checkpoint") == "best":
        which = f"the best dev loss ({kept.get('dev_loss', float('nan')):.3f}) at step {kept.get('best_step', 0):,} of {last:,}"
    else:
        steps = kept.get("steps") or []
        span = f"steps {steps[0]:,}–{steps[-1]:,}" if steps else "the last snapshots"
        which = (
            f"the average of {len(steps)} snapshots ({span} of {last:,}), whose dev loss "
            f"({kept.get('dev_loss', float('nan')):.3f}) beat the best single one"
        )
    stopped = str(result.get("stopped") or "at its limits")
    if old := OLD_REASON.fullmatch(stopped):  # a run from before the reasons were words
        stopped = f"at the {old[2]}-{old[1]} limit"
    return f"Kept {which}. Training stopped {stopped}."


def final_scores(run_dir: Path) -> dict[str, Any] | None:
    """The test-split scores written when training finished (BLEU, chrF and their sacrebleu signatures)."""
    result = read_json(run_dir / RESULT_FILE)
    test = result.get("test_greedy") if result else None
    return test if isinstance(test, dict) else None


# ----------------------------------------------------------------------------------------- probe sentences


def probe_steps(run_dir: Path) -> list[int]:
    """The steps whose probes were recorded, in order."""
    folder = run_dir / PROBES_DIR
    names = [p.name for p in folder.glob("step-*.npz")] if folder.is_dir() else []
    return sorted(int(m.group(1)) for name in names if (m := PROBE_FILE.fullmatch(name)))


def probe_labels(run_dir: Path) -> list[dict[str, list[str]]]:
    """Per probe sentence: its source pieces, decoder input and output pieces; [] when missing or unreadable."""
    try:
        rows = bounded_json(run_dir / PROBES_DIR / PROBE_TOKENS_FILE, ValueError)
    except ValueError:
        return []
    keys = ("src", "tgt_in", "tgt_out")
    ok = isinstance(rows, list) and all(
        isinstance(r, dict) and all(isinstance(r.get(k), list) for k in keys) for r in rows
    )
    return rows if ok else []


def probe_map(run_dir: Path, step: int, sentence: int, kind: str) -> np.ndarray | None:
    """One recorded map (L, H, rows, cols) as float32; None when it is missing or unreadable."""
    if kind not in KINDS:
        return None
    path = run_dir / PROBES_DIR / f"step-{step:08d}.npz"
    try:
        regular_size(path, OSError)  # a FIFO there would block the page
        with np.load(path, allow_pickle=False) as data:
            weights = data[f"{kind}_{sentence}"].astype(np.float32)
    except (OSError, KeyError, ValueError):
        return None
    return weights if weights.ndim == 4 else None
