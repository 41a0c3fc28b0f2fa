"""The two fixed sets of sentences around a taught correction: the pairs replayed beside it, the sentences checked.

Replay keeps a few steps on one pair from pulling the whole model towards it: a fixed sample of the model's own
training pairs (``splits/train.tsv`` of a run folder) when the folder has them, else the guided examples with the
model's own translations as targets (a shipped model folder holds no training pairs). The check set is what the
page translates before and after to answer "did it break anything?": the guided examples (they have right answers),
or for a model of another source language the first dev sentences of its run folder.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from data.readers import CorpusError, Pair, tsv_pairs
from lab.page.direction import Languages
from lab.page.examples import examples_for
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


def sample_of(path: Path, size: int, seed: int = SEED) -> list[Pair]:
    """A fixed sample of ``size`` pairs of a TSV file (bad lines skipped); [] when it cannot be read."""
    try:
        pairs = list(tsv_pairs(path, skip_bad=True))
    except CorpusError:
        return []
    return random.Random(seed).sample(pairs, min(size, len(pairs)))


def replay_set(translator: Translator, model_dir: Path, langs: Languages) -> Replay:
    """The run's training pairs (a fixed sample) when its folder holds them, else the guided examples with the
    model's own translations as targets; none for a model that has neither."""
    train = split_file(model_dir, "train")
    if pairs := sample_of(train, REPLAY_SIZE):
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
