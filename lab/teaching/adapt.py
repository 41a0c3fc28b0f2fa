"""A few fine-tuning steps of a private copy of the model on one corrected pair mixed with replayed pairs.

The loss is training's own (model/loss.py), with the model's own label smoothing: the mean over the correction's
tokens plus the mean over the replayed ones, so the one pair weighs as much as the replay. The step size is a fifth
of the model's peak learning rate. The shared model is deep-copied first: its weights cannot change.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from data.batch import collate, encode_pairs
from data.readers import Pair
from data.tokenizer import Tokenizer
from model.decode import greedy
from model.loss import token_loss
from model.run_dir import TRAIN_CONFIG_FILE
from model.transformer import Transformer

MAX_STEPS = 30  # the page's bound on the work of one adaptation …
MAX_SECONDS = 20.0  # … whichever comes first
LR_FRACTION = 0.2  # of the model's peak learning rate: one pair in a few steps, the rest left mostly as it was
REPLAY_PER_STEP = 7  # replayed pairs beside the correction in each step's batch
CLIP_NORM = 1.0  # as the presets: one large gradient of a single pair must not throw the weights far


@dataclass(frozen=True)
class StepSettings:
    """How the copy is stepped: Adam's step size and the loss's label smoothing."""

    lr: float = 1e-4  # a fifth of the presets' 5e-4, for a model folder without its training configuration
    label_smoothing: float = 0.1  # the presets' optim.label_smoothing


def step_settings(model_dir: Path) -> StepSettings:
    """A fifth of the model's own peak learning rate and its label smoothing, from its train_config.json (the
    defaults when it has none)."""
    try:
        optim = json.loads((Path(model_dir) / TRAIN_CONFIG_FILE).read_text(encoding="utf-8"))["optim"]
        return StepSettings(LR_FRACTION * float(optim["lr"]), float(optim["label_smoothing"]))
    except (OSError, ValueError, KeyError, TypeError):
        return StepSettings()


@dataclass(frozen=True)
class Adapted:
    """The fine-tuned copy and how its adaptation went."""

    model: Transformer  # the session's copy (the shared model is untouched)
    losses: tuple[float, ...]  # the correction's mean token loss (label-smoothed) before each step
    seconds: float
    produced: bool  # the copy's greedy output is exactly the correction's tokens
    stopped: str  # why it stopped, in words


def correction_loss(
    model: Transformer, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, label_smoothing: float
) -> tuple[Tensor, Tensor]:
    """(the loss to minimise, the correction's part of it): row 0 of the batch is the correction, the rest replay."""
    loss, _, real, _ = token_loss(model, src, tgt_in, tgt_out, label_smoothing)  # (N,)
    first = real.nonzero()[:, 0] == 0  # (N,): the correction's tokens
    taught = loss[first].mean()
    if bool(first.all()):  # nothing to replay
        return taught, taught
    return taught + loss[~first].mean(), taught


def produces(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> bool:
    """Whether greedy decoding of ``src_ids`` gives exactly ``tgt_ids`` (EOS last)."""
    (hypothesis,) = greedy(model, torch.tensor([src_ids]))
    return hypothesis.tokens == tgt_ids


def adapt(
    model: Transformer,
    tokenizer: Tokenizer,
    correction: Pair,
    replay: list[Pair],
    settings: StepSettings = StepSettings(),
    on_step: Callable[[int, float], None] | None = None,
) -> Adapted:
    """Fine-tune a deep copy of ``model`` on ``correction`` beside ``replay`` (cycled, ``REPLAY_PER_STEP`` a step)
    until it produces the correction (checked after every step), ``MAX_STEPS`` or ``MAX_SECONDS``;
    ``on_step(step, seconds)`` after each step (a progress bar)."""
    torch.manual_seed(1)
    start = time.perf_counter()
    local = copy.deepcopy(model).eval()  # dropout off: a handful of steps, the same on every run
    c = local.config
    taught, *_ = encode_pairs([correction], tokenizer, c.max_positions)
    pool = encode_pairs(replay, tokenizer, c.max_positions)
    optimizer = torch.optim.Adam(local.parameters(), lr=settings.lr)
    losses: list[float] = []
    produced, stopped = False, f"{MAX_STEPS} steps"
    for step in range(1, MAX_STEPS + 1):
        others = [pool[(step * REPLAY_PER_STEP + i) % len(pool)] for i in range(REPLAY_PER_STEP)] if pool else []
        batch = collate([taught, *others], c.pad_id, c.bos_id)
        loss, part = correction_loss(local, batch.src, batch.tgt_in, batch.tgt_out, settings.label_smoothing)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(local.parameters(), CLIP_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(part.detach()))
        seconds = time.perf_counter() - start
        if on_step is not None:
            on_step(step, seconds)
        with torch.inference_mode():  # one greedy decode: a small fraction of a step, and no step more than needed
            produced = produces(local, taught.src, taught.tgt)
        if produced:
            stopped = f"it produced the correction after {step} step{'s' if step > 1 else ''}"
            break
        if seconds >= MAX_SECONDS:
            stopped = f"the {MAX_SECONDS:g} s budget ran out after {step} steps"
            break
    for parameter in local.parameters():
        parameter.requires_grad_(False)  # the copy is only decoded from now on
    return Adapted(local, tuple(losses), time.perf_counter() - start, produced, stopped)
