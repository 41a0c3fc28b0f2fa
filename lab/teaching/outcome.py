"""A correction taught and what it did: the sentence and its cross-attention before and after, the checked sentences
before and after, and how the adaptation went. Only results are kept: the adapted copy is dropped once measured.

Replay keeps a few steps on one pair from pulling the whole model towards it: a fixed sample of the model's own
training pairs (``splits/train.tsv`` of a run folder) when the folder has them, else the guided examples with the
model's own translations as targets (a shipped model folder holds no training pairs). The check set is what the
page translates before and after to answer "did it break anything?": the guided examples (they have right answers),
or for a model of another source language the first dev sentences of its run folder.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from data.readers import CorpusError, Pair, tsv_pairs
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.translate_with_maps import maps_of
from lab.page.direction import Languages
from lab.page.examples import examples_for
from lab.teaching.adapt import adapt, step_settings
from model.run_dir import split_file
from translate.translator import DecodeOptions, Translator

REPLAY_SIZE = 32  # replayed pairs, 7 a step: each seen about 6 times in a 30-step adaptation
CHECK_SIZE = 10  # dev sentences checked for a model without guided examples
SEED = 1  # the replay sample is the same on every run


@dataclass(frozen=True)
class Replay:
    pairs: tuple[Pair, ...]
    origin: str  # where they come from, in words, "{n}" the pairs replayed (those of the taught sentence left out)
    guards_checks: bool  # the checked sentences are among them: a check is then weaker (they were held in place)


def replay_set(translator: Translator, model_dir: Path, langs: Languages) -> Replay:
    """The run's training pairs (a fixed sample) when its folder holds them, else the guided examples with the
    model's own translations as targets; none for a model that has neither."""
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
    """Teach a copy of ``translator``'s model that ``source`` is ``correction`` and measure it; the shared model
    and ``model_dir`` are only read."""
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
