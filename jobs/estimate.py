"""The estimate before Start: how long a run takes on this machine, how many epochs the budget buys, its memory.

``python -m training.calibrate`` times a few real steps of the preset on a sample of the corpus (in its own
process); the figures are stored in the runs folder, keyed by preset, overrides, corpus and machine. ``estimate``
scales them to the whole corpus and the limits: a pure function, so the page follows a changed limit at once. The
estimate a run started with is saved in its folder and shown beside what happened."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.launch import run_tool
from jobs.run_progress import read_json, read_jsonl, read_metrics
from model.run_dir import ESTIMATE_FILE, JOB_EVENTS_FILE, RESULT_FILE
from training.calibrate import CALIBRATION_VERSION  # the only figures this module reads
from training.train_config import TrainConfig

CALIBRATION_DIR = ".calibration"  # in the runs folder; hidden, so never taken for a run
MAX_AGE_S = 24 * 3600.0  # a stored calibration older than this is measured again
TIMEOUT_S = 120.0  # the calibration process is killed after this
DEV_FLOOR, DEV_SHARE = 200, 0.05  # the dev set holds at least 200 sentences, or 5 % of the corpus when that is fewer
MIN_EVALS = 2  # dev evaluations the verdict needs (jobs.run_verdict), inside the steps the estimate expects


class EstimateError(RuntimeError):
    """No estimate: the calibration failed or its figures cannot be read; the message says why."""


@dataclass(frozen=True)
class Calibration:
    """What ``python -m training.calibrate`` measured on a sample of the corpus (see its ``measure``)."""

    sample_pairs: int
    dev_pairs: int
    test_pairs: int
    train_pairs: int
    steps_per_epoch: int
    pieces_per_pair: float
    seconds_per_step: float
    dev_loss_seconds_per_pair: float
    translate_seconds_per_sentence: float
    setup_seconds: float
    startup_seconds: float
    peak_memory_mb: float
    device: str
    measured_at: float = 0.0

    @classmethod
    def from_json(cls, data: Any, where: str) -> Calibration:
        """Checked figures; EstimateError naming ``where`` and the field when one is missing or not a number."""
        if not isinstance(data, dict) or data.get("version") != CALIBRATION_VERSION:
            raise EstimateError(f"{where}: not a calibration of version {CALIBRATION_VERSION}")
        values = {}
        for f in dataclasses.fields(cls):
            value = data.get(f.name, 0.0 if f.name == "measured_at" else None)
            wanted = str if f.type == "str" else (int, float)
            if not isinstance(value, wanted) or isinstance(value, bool):
                raise EstimateError(f"{where}: {f.name} is missing or not a {'text' if wanted is str else 'number'}")
            if wanted is not str and (not math.isfinite(value) or value < 0):
                raise EstimateError(f"{where}: {f.name} = {value!r} is not a finite number ≥ 0")
            values[f.name] = value
        if values["steps_per_epoch"] < 1 or values["train_pairs"] < 1:
            raise EstimateError(f"{where}: no training batches measured")
        return cls(**values)


@dataclass(frozen=True)
class Estimate:
    pairs: int  # after cleaning
    train_pairs: int
    tokens: int  # subword pieces of the training pairs, both sides
    steps_per_epoch: int
    seconds_per_step: float
    steps: int  # the steps the limits allow
    epochs: float  # what those steps are in epochs
    limit: str  # the limit that binds first, in words
    evaluations: int
    eval_every: int  # steps between dev evaluations: the preset's, or closer so that MIN_EVALS fit
    train_seconds: float
    total_seconds: float  # start to finish: startup, data, training, final scoring
    finish_at: float  # time.time() of the expected finish
    peak_memory_mb: float


def split_sizes(pairs: int, config: TrainConfig) -> tuple[int, int]:
    """The dev and test pairs a run of ``pairs`` takes (as ``training.prepare.load_and_split``)."""
    d = config.data
    return min(d.dev_size, max(1, pairs // 10)), min(d.test_size, max(1, pairs // 10))


def dev_floor(pairs: int) -> int:
    """The fewest dev sentences a run of ``pairs`` may be judged on: DEV_FLOOR, or DEV_SHARE of the corpus if fewer."""
    return max(1, min(DEV_FLOOR, int(pairs * DEV_SHARE)))


def dev_override(pairs: int, config: TrainConfig) -> list[str]:
    """``data.dev_size`` raised to the floor when the preset asks for fewer (tiny's 20); else nothing."""
    return [f"data.dev_size={dev_floor(pairs)}"] if config.data.dev_size < dev_floor(pairs) else []


def estimate(pairs: int, config: TrainConfig, cal: Calibration, now: float) -> Estimate:
    """Scale the calibration to ``pairs`` checked pairs and the limits of ``config``; ``now`` for the finish time. The
    evaluation spacing is the preset's unless fewer than MIN_EVALS evaluations would fit in the steps expected: then
    it is narrowed (each evaluation's time counted again) until they do, and the run is started with it."""
    made = _estimate(pairs, config, cal, now, config.run.eval_every)
    for _ in range(8):  # narrower spacing costs evaluation time, which may cost steps under a minutes limit
        if made.steps // made.eval_every >= MIN_EVALS or made.eval_every == 1:
            break
        made = _estimate(pairs, config, cal, now, max(1, made.steps // (MIN_EVALS + 1)))
    return made


def _count(n: float, unit: str) -> str:
    """``8,000 steps``, ``1 minute``, ``2.5 minutes``: a limit in words."""
    return (f"{int(n):,}" if n == int(n) else f"{n:g}") + f" {unit}" + ("" if n == 1 else "s")


def _estimate(pairs: int, config: TrainConfig, cal: Calibration, now: float, eval_every: int) -> Estimate:
    o, r = config.optim, config.run
    dev, test = split_sizes(pairs, config)
    base = max(1, cal.sample_pairs - cal.dev_pairs - cal.test_pairs)
    train_pairs = max(1, round((pairs - dev - test) * cal.train_pairs / base))  # with split sentences added
    steps_per_epoch = max(1, math.ceil(cal.steps_per_epoch * train_pairs / cal.train_pairs))
    eval_s = dev * cal.dev_loss_seconds_per_pair + min(dev, r.dev_bleu_sentences) * cal.translate_seconds_per_sentence
    per_step = cal.seconds_per_step + eval_s / eval_every  # evaluations happen inside the time budget
    limits = [
        (o.max_steps, _count(o.max_steps, "step")),
        (o.max_epochs * steps_per_epoch, _count(o.max_epochs, "epoch")),
    ]
    if o.max_minutes > 0:
        limits.append((max(1, int(o.max_minutes * 60 / per_step)), _count(o.max_minutes, "minute")))
    steps, limit = min(limits, key=lambda item: item[0])
    evaluations = steps // eval_every + (steps % eval_every > 0)
    train_s = steps * cal.seconds_per_step + evaluations * eval_s
    if o.max_minutes > 0:
        train_s = min(train_s, o.max_minutes * 60 + eval_s)  # the last evaluation runs after the minutes are up
    setup_s = cal.setup_seconds * max(1.0, pairs / max(1, cal.sample_pairs))  # tokenizer: roughly linear
    finish_s = 2 * test * cal.translate_seconds_per_sentence + (2 if r.average_last else 1) * eval_s
    total = cal.startup_seconds + setup_s + train_s + finish_s
    return Estimate(
        pairs=pairs,
        train_pairs=train_pairs,
        tokens=round(train_pairs * cal.pieces_per_pair),
        steps_per_epoch=steps_per_epoch,
        seconds_per_step=cal.seconds_per_step,
        steps=steps,
        epochs=steps / steps_per_epoch,
        limit=limit,
        evaluations=evaluations,
        eval_every=eval_every,
        train_seconds=train_s,
        total_seconds=total,
        finish_at=now + total,
        peak_memory_mb=cal.peak_memory_mb,
    )


# ----------------------------------------------------------------------------------------- measuring and storing


def calibration_key(preset: Path, overrides: Sequence[str], corpus_id: str) -> str:
    """What the figures depend on: the preset's text, the overrides that shape the model, the corpus and the machine."""
    digest = hashlib.sha256()
    for part in (preset.read_bytes(), "\n".join(sorted(overrides)).encode(), corpus_id.encode()):
        digest.update(part)
    digest.update(f"{os.cpu_count()} {sys.version} {os.environ.get('CUDA_VISIBLE_DEVICES', '')}".encode())
    return digest.hexdigest()[:24]


def stored_calibration(runs_dir: Path, key: str, now: float) -> Calibration | None:
    """The calibration stored under ``key`` when it is recent enough and readable; None otherwise."""
    path = runs_dir / CALIBRATION_DIR / f"{key}.json"
    try:  # missing, half-written or of another version: measured again
        cal = Calibration.from_json(read_json(path), str(path))
    except EstimateError:
        return None
    return cal if 0 <= now - cal.measured_at <= MAX_AGE_S else None


def calibrate(
    runs_dir: Path, key: str, preset: Path, corpus: Path, overrides: Sequence[str] = (), timeout_s: float = TIMEOUT_S
) -> Calibration:
    """Run ``python -m training.calibrate`` on the checked ``corpus`` and store its figures under ``key``."""
    folder = runs_dir / CALIBRATION_DIR
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{key}.json"
    args = ["training.calibrate", "--config", str(preset), "--corpus", str(corpus), "--out", str(out)]
    if problem := run_tool([*args, f"--launched-at={time.time()}", *(f"--{item}" for item in overrides)], timeout_s):
        raise EstimateError(f"measuring failed: {problem}")
    data = read_json(out)
    data = {**data, "measured_at": time.time()} if data is not None else None
    cal = Calibration.from_json(data, str(out))
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return cal


# ----------------------------------------------------------------------------------------- after the run


@dataclass(frozen=True)
class Outcome:
    steps: int
    train_seconds: float
    total_seconds: float | None  # start event to metrics.json; None before it finished


def outcome(run_dir: Path) -> Outcome | None:
    """Steps and seconds from metrics.jsonl, and the wall time from the job's start to metrics.json."""
    timed = [r for r in read_metrics(run_dir) if isinstance(r.get("elapsed_s"), int | float)]
    if not timed:
        return None
    last = max(timed, key=lambda r: r["step"])
    events = read_jsonl(run_dir / JOB_EVENTS_FILE)
    starts = [e["time"] for e in events if e.get("event") == "start" and isinstance(e.get("time"), int | float)]
    result = run_dir / RESULT_FILE  # a resumed run's wall time holds its pause: none given
    total = result.stat().st_mtime - starts[0] if len(starts) == 1 and result.is_file() else None
    return Outcome(int(last["step"]), float(last["elapsed_s"]), total)


def save_estimate(run_dir: Path, made: Estimate) -> None:
    (run_dir / ESTIMATE_FILE).write_text(json.dumps(dataclasses.asdict(made), indent=2) + "\n", encoding="utf-8")
