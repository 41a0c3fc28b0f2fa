"""``metrics.jsonl``: one JSON record per line, ``kind`` "train" (a window of steps) or "eval" (a dev evaluation).

The Train page's progress reader (jobs/run_progress.py) and its charts (viz/training_charts.py) read these
records; the record kinds are named in model/run_dir.py.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from model.run_dir import EVALUATING_FILE, TRAIN_RECORD
from model.weights import write_beside
from training.distributed import Env, all_reduce_sum
from training.progress import Progress
from training.train_config import OptimConfig


@dataclass(eq=False)
class MetricsLog:
    """Appends one JSON object per line to ``metrics.jsonl`` (rank 0 only)."""

    path: Path
    enabled: bool

    def write(self, **record: Any) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")

    def evaluating(self, step: int, task: str, done: int, total: int) -> None:
        """Where the dev evaluation at ``step`` is (``task`` "loss" or "bleu", ``done`` of ``total`` sentences), in
        EVALUATING_FILE beside the log: minutes of evaluation read as a frozen run on the Train page without it."""
        if self.enabled:
            record = {"time": round(time.time(), 3), "step": step, "task": task, "done": done, "total": total}
            write_beside(self.path.with_name(EVALUATING_FILE), lambda f: f.write(json.dumps(record).encode()))

    def evaluated(self) -> None:
        """The evaluation is over (or none is running): no EVALUATING_FILE."""
        if self.enabled:
            self.path.with_name(EVALUATING_FILE).unlink(missing_ok=True)

    def start_fresh(self) -> None:
        """A new run starts an empty log."""
        if self.enabled:
            self.path.write_text("", encoding="utf-8")

    def truncate_after(self, step: int) -> None:
        """On resume: drop records newer than the saved state (and a line cut short by a kill), so none repeat."""
        if not self.enabled or not self.path.is_file():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("step", 0) <= step:
                kept.append(line + "\n")
        write_beside(self.path, lambda f: f.write("".join(kept).encode("utf-8")))


@dataclass
class Window:
    """Sums since the last ``kind="train"`` record."""

    start: float = field(default_factory=time.perf_counter)
    steps: int = 0
    tokens: int = 0
    loss: float = 0.0
    nll: float = 0.0
    align: float = 0.0  # guided alignment's loss
    lr: float = 0.0  # learning rate of the window's last step

    def add(self, loss: float, nll: float, align: float, tokens: int, lr: float) -> None:
        self.steps, self.tokens = self.steps + 1, self.tokens + tokens
        self.loss, self.nll, self.align, self.lr = self.loss + loss, self.nll + nll, self.align + align, lr

    def reset(self) -> None:
        self.start, self.steps, self.tokens = time.perf_counter(), 0, 0
        self.loss = self.nll = self.align = self.lr = 0.0


def log_train(window: Window, progress: Progress, o: OptimConfig, env: Env, metrics: MetricsLog, bar: tqdm) -> None:
    """One ``kind="train"`` record: loss and NLL per target token over all processes since the last record."""
    seconds = time.perf_counter() - window.start
    tokens = all_reduce_sum(window.tokens, env)
    record = {
        "step": progress.step,
        "epoch": progress.epoch,
        "epochs_done": progress.epoch + progress.batch_in_epoch / max(1, progress.epoch_batches),  # fractional
        "loss": all_reduce_sum(window.loss, env) / max(1, tokens),
        "nll": all_reduce_sum(window.nll, env) / max(1, tokens),
        "lr": window.lr,
        "tokens_per_s": tokens / max(seconds, 1e-9),
        "elapsed_s": progress.elapsed,
        "max_steps": o.max_steps,
    }
    if o.guided_alignment.enabled:  # per target token, like loss: KL of the supervised head's rows, summed
        record["align_loss"] = all_reduce_sum(window.align, env) / max(1, tokens)
    metrics.write(kind=TRAIN_RECORD, **record)
    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")
