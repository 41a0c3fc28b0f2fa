"""training.trainer's dev loss: the per-token mean as before, the dev set's noise from the sentences' losses, and
how far an evaluation is (the Train page shows it)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
import torch
from conftest import tiny_config

from data.batch import Example, batch_indices, collate
from jobs.run_progress import evaluating, read_metrics
from model.run_dir import EVALUATING_FILE, METRICS_LOG_FILE
from model.transformer import Transformer
from training.distributed import Env
from training.metrics import MetricsLog
from training.train_config import load_train_config
from training.trainer import TranslationLoss, evaluate_nll
from translate.settings import REPO_ROOT

CONFIG = load_train_config(REPO_ROOT / "configs" / "tiny.toml", [])
ALONE = Env(torch.device("cpu"), 0, 1, None)


def examples(n: int, seed: int = 0) -> list[Example]:
    rng = random.Random(seed)  # ids 4+: 0-3 are pad, unk, bos, eos in the tiny config
    return [
        Example(
            [rng.randrange(4, 40) for _ in range(rng.randrange(2, 9))] + [3],
            [rng.randrange(4, 40) for _ in range(rng.randrange(2, 9))] + [3],
        )
        for _ in range(n)
    ]


def test_the_mean_is_the_per_token_nll_and_the_noise_shrinks_with_more_sentences() -> None:
    torch.manual_seed(0)
    model = Transformer(tiny_config())
    dev = examples(64)
    mean, noise = evaluate_nll(model, dev, CONFIG, ALONE)
    c, loss, tokens = model.config, TranslationLoss(model, 0.0), 0
    total = 0.0
    model.eval()
    with torch.inference_mode():
        for indices in batch_indices(dev, CONFIG.optim.max_tokens, 0, 0, bucketing=True, shuffle=False):
            batch = collate([dev[i] for i in indices], c.pad_id, c.bos_id)
            total += float(loss(batch.src, batch.tgt_in, batch.tgt_out)[1])
            tokens += batch.n_tgt_tokens
    assert mean == pytest.approx(total / tokens, rel=1e-5)
    assert noise > 0
    assert evaluate_nll(model, dev[:8], CONFIG, ALONE)[1] > noise  # fewer sentences, more noise
    assert evaluate_nll(model, dev[:1], CONFIG, ALONE)[1] == 0.0  # one sentence: no spread to measure


def test_a_dev_evaluation_says_how_far_it_is_until_it_ends(tmp_path: Path) -> None:
    """The dev loss reports its sentences batch by batch up to all of them; the run's folder says where an
    evaluation is while it runs, in words the Train page shows, and nothing once it ended or a train record came
    after it (a stop cut it short)."""
    told: list[tuple[int, int]] = []
    evaluate_nll(Transformer(tiny_config()), examples(64), CONFIG, ALONE, lambda *how_far: told.append(how_far))
    assert len(told) > 1 and told[-1] == (64, 64) and told == sorted(told)
    metrics = MetricsLog(tmp_path / METRICS_LOG_FILE, enabled=True)
    metrics.write(kind="train", step=50)
    metrics.evaluating(50, "loss", 120, 299)
    now = evaluating(tmp_path, read_metrics(tmp_path))
    assert now == (120 / 299, "Evaluating at step 50 on 299 dev sentences… (120 of 299)")
    metrics.evaluating(50, "bleu", 64, 100)
    assert evaluating(tmp_path, read_metrics(tmp_path))[1].endswith(
        "translating 100 dev sentences for BLEU… (64 of 100)"
    )
    metrics.write(kind="train", step=51, time=time.time() + 1)
    assert evaluating(tmp_path, read_metrics(tmp_path)) is None  # training went on: that evaluation is not running
    metrics.evaluated()
    assert not (tmp_path / EVALUATING_FILE).exists()
