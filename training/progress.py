"""Where training is (saved with the state, so --resume continues exactly) and the one rule of when it stops."""

from __future__ import annotations

from dataclasses import dataclass

from training.train_config import OptimConfig, TrainConfig


@dataclass
class Progress:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    epoch_batches: int = 0  # batches of the current epoch (this process's), known when it begins
    tokens: int = 0
    best_dev_loss: float = float("inf")
    evals_without_improvement: int = 0
    elapsed: float = 0.0
    warmup_elapsed: float = -1.0  # seconds of training when warmup ended (-1: not yet)
    best_step: int = 0  # the step of the best dev loss so far (the "best" checkpoint)
    stopped: str = ""  # why training stopped (``stop_reason``), once it has


def time_budget_progress(progress: Progress, optim: OptimConfig) -> float:
    """Share of the post-warmup minutes budget used so far (0 without a budget or during warmup)."""
    if optim.max_minutes <= 0 or progress.warmup_elapsed < 0:
        return 0.0
    budget = optim.max_minutes * 60 - progress.warmup_elapsed
    return min(1.0, (progress.elapsed - progress.warmup_elapsed) / max(1.0, budget))


def stop_reason(progress: Progress, config: TrainConfig, epoch_ended: bool = False) -> str:
    """Why training stops now, in words ("at the 7-minute limit"), or "" to go on: the step, minutes or epochs
    limit, or early stopping (patience). ``epoch_ended``: the epoch's last batch has been taken (the epochs limit
    counts finished epochs)."""
    o, r = config.optim, config.run
    if progress.step >= o.max_steps:
        return f"at the {o.max_steps:,}-step limit"
    if 0 < o.max_minutes * 60 < progress.elapsed:
        return f"at the {o.max_minutes:g}-minute limit"
    if epoch_ended and progress.epoch >= o.max_epochs - 1:
        return f"at the {o.max_epochs:,}-epoch limit"
    if 0 < r.patience <= progress.evals_without_improvement:
        return f"after {r.patience} evaluations in a row without a better dev loss (its patience)"
    return ""
