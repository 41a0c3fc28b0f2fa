"""The workshop's command-line numbers, bounded where they are read: a count, a number of seconds or of threads out
of its range is one line naming the option and the range (exit status 2) before any work, never clamped."""

from __future__ import annotations

import torch

from translate.cli import refuse_unless
from translate.settings import MAX_THREADS

# The benches' largest counts (their defaults lie far below).
MAX_REPEATS = 100  # timed calls (or rounds of clicks) of one figure
MAX_SESSIONS = 32  # browser sessions at once
MAX_BENCH_SECONDS = 3600  # how long sessions run
MAX_SENTENCES = 1_000_000  # test sentences a --limit keeps
MAX_TIMED = 10_000  # timed steps, sentences timed one at a time, sentences in a training batch


def within(option: str, value: float, low: float, high: float, unit: str = "") -> float:
    """``value``, or exit 2 with ``error: OPTION VALUE: expected LOW to HIGH UNIT`` (NaN is out of every range)."""
    refuse_unless(
        low <= value <= high, f"{option} {value}: expected {low:,} to {high:,}" + (f" {unit}" if unit else "")
    )
    return value


def use_threads(threads: int, default: bool = True) -> None:
    """Torch's threads from ``--threads``: 1 … MAX_THREADS, or 0 for torch's default where ``default``."""
    within("--threads", threads, 0 if default else 1, MAX_THREADS, "(twice this machine's cores)")
    if threads:
        torch.set_num_threads(threads)
