"""Fine-tuning from the Train page: a finished model (the shipped one, or a run) as the starting point, with the
command line's ``--init-from`` semantics (``run.init_from``: its tokenizer, shape and weights; a fresh optimizer
and schedule) and a small learning rate, so that a small corpus adjusts the model instead of overwriting it."""

from __future__ import annotations

from pathlib import Path

from data.tokenizer import Tokenizer, TokenizerError
from jobs.control import JobError
from model.bounded_read import read_json
from model.run_dir import CONFIG_FILE, RESULT_FILE, WEIGHTS_FILE

FINETUNE_LR = 1e-4  # a tenth of the presets' 1e-3: the parent's knowledge survives a few hundred steps
MAX_FINETUNE_LR = 1e-2


def fine_tune_overrides(parent: Path, lr: float = FINETUNE_LR) -> list[str]:
    """The overrides that start a run from ``parent``: run.init_from, the learning rate (reached after the preset's
    warmup: measured, a gentle start kept more of the parent on 1,000 Tatoeba pairs than a 100-step warmup did), and
    the parent's way of reading the source (case markup); JobError when ``parent`` is no model directory or ``lr``
    is out of range."""
    if not all((parent / name).is_file() for name in (CONFIG_FILE, WEIGHTS_FILE)):
        raise JobError(f"{parent} is not a finished model ({CONFIG_FILE} and {WEIGHTS_FILE} expected)")
    if not 0 < lr <= MAX_FINETUNE_LR:
        raise JobError(f"learning rate {lr:g}: expected a number above 0 and at most {MAX_FINETUNE_LR:g}")
    try:
        tokenizer = Tokenizer.load(parent)
    except TokenizerError as err:
        raise JobError(f"{parent}: {err}") from None
    return [
        f"run.init_from={parent.resolve()}",
        f"optim.lr={lr:g}",
        f"data.case_markup={str(tokenizer.case_markup).lower()}",
    ]


def parent_score(parent: Path) -> tuple[float, str] | None:
    """(BLEU, "dev BLEU") of a model to fine-tune from its ``metrics.json`` (a shipped model's card), else (BLEU,
    "test BLEU"); None when it records neither."""
    try:
        scores = read_json(parent / RESULT_FILE, ValueError)
    except (OSError, ValueError):
        return None
    for key, which in (("dev_greedy", "dev BLEU"), ("test_greedy", "test BLEU")):
        row = scores.get(key) if isinstance(scores, dict) else None
        if isinstance(row, dict) and isinstance(row.get("bleu"), int | float):
            return float(row["bleu"]), which
    return None
