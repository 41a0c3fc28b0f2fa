"""Teach the model a correction: a few fine-tuning steps of a private copy (the shared model is deep-copied: its
weights cannot change) on the corrected pair mixed with replayed pairs, then what it changed: the sentence and its
cross-attention before and after, the checked sentences before and after. Only results are kept.

The loss is training's own (model/loss.py), with the model's own label smoothing: the mean over the correction's
tokens plus the mean over the replayed ones, so the one pair weighs as much as the replay. Replay keeps a few steps on
one pair from pulling the whole model towards it: a fixed sample of the run's training pairs, else the guided examples
with the model's own translations as targets. The check set answers "did it break anything?": the guided examples
(they have right answers), else the first dev sentences of the run folder.
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch
from torch import Tensor

from data.batch import collate, encode_pairs
from data.readers import CorpusError, Pair, tsv_pairs
from data.tokenizer import Tokenizer
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.translate_with_maps import maps_of
from lab.page.direction import Languages
from lab.page.examples import examples_for
from model.decode import greedy
from model.loss import token_loss
from model.run_dir import TRAIN_CONFIG_FILE, split_file
from model.transformer import Transformer
from translate.translator import DecodeOptions, Translator

MAX_STEPS = 30  # the page's bound on the work of one adaptation …
MAX_SECONDS = 20.0  # … whichever comes first
LR_FRACTION = 0.2  # of the model's peak learning rate: one pair in a few steps, the rest left mostly as it was
REPLAY_PER_STEP = 7  # replayed pairs beside the correction in each step's batch
CLIP_NORM = 1.0  # as the presets: one large gradient of a single pair must not throw the weights far
REPLAY_SIZE = 32  # replayed pairs, 7 a step: each seen about 6 times in a 30-step adaptation
CHECK_SIZE = 10  # dev sentences checked for a model without guided examples
SEED = 1  # the replay sample is the same on every run


@dataclass(frozen=True)
class StepSettings:
    """How the copy is stepped: Adam's step size and the loss's label smoothing."""

    lr: float = 1e-4  # a fifth of the presets' 5e-4, for a model folder without its training configuration
    label_smoothing: float = 0.1  # the presets' optim.label_smoothing


def step_settings(model_dir: Path) -> StepSettings:
    """A fifth of the model's peak learning rate and its label smoothing (train_config.json; defaults without it)."""
    try:
        optim = json.loads((Path(model_dir) / TRAIN_CONFIG_FILE).read_text(encoding="utf-8"))["optim"]
        return StepSettings(LR_FRACTION * float(optim["lr"]), float(optim["label_smoothing"]))
    except (OSError, ValueError, KeyError, TypeError):
        return StepSettings()


@dataclass(frozen=True)
class Adapted:
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
    """Fine-tune a deep copy of ``model`` on ``correction`` beside ``replay`` (``REPLAY_PER_STEP`` a step) until it
    produces the correction, ``MAX_STEPS`` or ``MAX_SECONDS``; ``on_step(step, seconds)`` after each step."""
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


@dataclass(frozen=True)
class Replay:
    pairs: tuple[Pair, ...]
    origin: str  # where they come from, in words, "{n}" the pairs replayed (those of the taught sentence left out)
    guards_checks: bool  # the checked sentences are among them: a check is then weaker (they were held in place)


def replay_set(translator: Translator, model_dir: Path, langs: Languages) -> Replay:
    """A fixed sample of the run's training pairs, else the guided examples with the model's own translations."""
    try:
        train = list(tsv_pairs(split_file(model_dir, "train"), skip_bad=True))
    except CorpusError:
        train = []
    if train:
        pairs = random.Random(SEED).sample(train, min(REPLAY_SIZE, len(train)))
        return Replay(tuple(pairs), "{n} of this run's training pairs (`splits/train.tsv`)", False)
    sources = [e.source for e in examples_for(langs)]
    if not sources:
        return Replay((), "nothing (this model folder has no training pairs and no guided examples)", False)
    own = translator.translate_all(sources, DecodeOptions())
    pairs = [Pair(s, t.text) for s, t in zip(sources, own, strict=True)]
    origin = "the {n} guided examples with the model's own translations (no `splits/train.tsv` here)"
    return Replay(tuple(pairs), origin, True)


def check_sources(model_dir: Path, langs: Languages) -> tuple[str, ...]:
    """The sentences translated before and after: the guided examples, else the run's first dev sentences."""
    if examples := examples_for(langs):
        return tuple(e.source for e in examples)
    try:
        dev = tsv_pairs(split_file(model_dir, "dev"), skip_bad=True)
        return tuple(p.src for p in islice(dev, CHECK_SIZE))
    except CorpusError:
        return ()


class CorrectionError(ValueError):
    """A correction the page cannot teach (empty, what the model already says, or outside its vocabulary)."""


@dataclass(frozen=True)
class Checked:
    source: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Outcome:
    """What one taught correction changed, for the page to show (no model inside: safe to keep in a session)."""

    model: str  # the model directory whose copy was taught
    source: str
    correction: str
    before: str  # the original model's translation of ``source``
    after: str  # the adapted copy's
    before_maps: SentenceMaps
    after_maps: SentenceMaps
    losses: tuple[float, ...]  # the correction's token loss before each step
    seconds: float
    produced: bool  # the copy decodes (greedily) exactly the correction
    stopped: str
    replay: str  # where the replayed pairs came from, in words
    guards_checks: bool  # the checked sentences were replayed too
    checks: tuple[Checked, ...]

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def changed(self) -> list[Checked]:
        return [c for c in self.checks if c.changed]


def teach(
    translator: Translator,
    model_dir: Path,
    langs: Languages,
    source: str,
    correction: str,
    options: DecodeOptions | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> Outcome:
    """Teach a copy of ``translator``'s model that ``source`` is ``correction``, and measure what it changed."""
    options = options or DecodeOptions()
    correction = correction.strip()
    if not correction:
        raise CorrectionError(f"Type the right {langs.tgt} first.")
    original = translator.translate(source, options)
    if original.text.strip() == correction:
        raise CorrectionError(f"The model already says exactly that: type a different {langs.tgt} sentence to teach.")
    replay = replay_set(translator, model_dir, langs)
    tokenizer = translator.tokenizer
    if tokenizer.tgt.unk_id() in tokenizer.encode_tgt(correction):
        raise CorrectionError(
            f"Part of this {langs.tgt} has no form in the model's vocabulary: it could only learn “⁇” for it."
        )
    settings = step_settings(model_dir)
    others = [p for p in replay.pairs if p.src != source]  # a replayed pair of the same source would contradict it
    adapted = adapt(translator.model, tokenizer, Pair(source, correction), others, settings, on_step)
    copy = Translator(adapted.model, tokenizer, translator.guard)  # read as the shared model reads, guard and all
    taught = copy.translate(source, options)
    sources = [s for s in check_sources(model_dir, langs) if s != source]  # the other sentences
    before = translator.translate_all(sources, options) if sources else []
    after = copy.translate_all(sources, options) if sources else []
    return Outcome(
        model=str(model_dir),
        source=source,
        correction=correction,
        before=original.text,
        after=taught.text,
        before_maps=maps_of(translator, original.src_ids, original.best.tokens),
        after_maps=maps_of(copy, taught.src_ids, taught.best.tokens),
        losses=adapted.losses,
        seconds=adapted.seconds,
        produced=adapted.produced,
        stopped=adapted.stopped,
        replay=replay.origin.format(n=len(others)),  # the taught sentence's own pair is not replayed
        guards_checks=replay.guards_checks,
        checks=tuple(Checked(s, b.text, a.text) for s, b, a in zip(sources, before, after, strict=True)),
    )
