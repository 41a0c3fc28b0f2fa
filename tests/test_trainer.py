"""training.trainer's dev loss: the per-token mean as before, and the dev set's noise from the sentences' losses."""

from __future__ import annotations

import random

import pytest
import torch
from conftest import tiny_config

from data.batch import Example, batch_indices, collate
from model.transformer import Transformer
from training.distributed import Env
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
