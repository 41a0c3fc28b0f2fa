"""Which training pairs a model's neighbour index is built over: its run's ``splits/train.tsv`` when the folder has
one, else the corpus its ``train_config.json`` names (a shipped model folder holds no training pairs), the dev and
test pairs its ``split.json`` records left out, at most ``MAX_PAIRS``."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from data.corpus import normalise, read_corpus
from data.readers import CorpusError, Pair, Reading, tsv_pairs
from model.run_dir import SPLIT_RECORD_FILE, TRAIN_CONFIG_FILE, split_file
from translate.settings import REPO_ROOT

MAX_PAIRS = 120_000  # the shipped model's corpus (117,160 training pairs) fits whole
SEED = 1  # a corpus over the cap is sampled, the same way every build


class NeighboursError(ValueError):
    """No training pairs to index; the message names the file and what was expected."""


@dataclass(frozen=True)
class TrainingPairs:
    pairs: list[Pair]
    origin: str  # where they come from, in words
    source: Path  # the file read
    available: int  # pairs to index before the cap


def capped(pairs: list[Pair], cap: int) -> list[Pair]:
    """At most ``cap`` of ``pairs``, a fixed sample in their own order."""
    if len(pairs) <= cap:
        return pairs
    keep = sorted(random.Random(SEED).sample(range(len(pairs)), cap))
    return [pairs[i] for i in keep]


def config_data(model_dir: Path) -> dict:
    """The ``data`` section of the folder's ``train_config.json``."""
    path = model_dir / TRAIN_CONFIG_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        corpora = data["corpora"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise NeighboursError(f"{path}: expected a training config with data.corpora ({err})") from None
    if not isinstance(corpora, list) or not corpora:
        raise NeighboursError(f"{path}: data.corpora names no corpus (expected a list of files)")
    return data


def held_out(model_dir: Path) -> set[tuple[int, int]]:
    """(corpus, position) of every dev and test pair the folder's split record names; empty without one."""
    path = model_dir / SPLIT_RECORD_FILE
    if not path.is_file():
        return set()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return {(int(i), int(n)) for i, n in record["dev"] + record["test"]}
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise NeighboursError(f"{path}: expected a split record with dev and test positions ({err})") from None


def corpus_pairs_of(model_dir: Path, cap: int) -> TrainingPairs:
    """The corpora a model was trained on, as training read them (NFC, its direction), less its dev and test."""
    data = config_data(model_dir)
    how = Reading(data.get("src_lang", "es"), data.get("tgt_lang", "en"), True, tuple(data.get("columns", ())) or None)
    skip, read, pairs = held_out(model_dir), 0, []
    for i, name in enumerate(data["corpora"]):
        path = Path(name) if Path(name).is_absolute() else REPO_ROOT / name  # training ran in the repository
        if not path.is_file():
            raise NeighboursError(f"{model_dir / TRAIN_CONFIG_FILE}: its corpus {name} is not on this machine")
        try:
            found = read_corpus(path, data.get("format", "auto"), how)
        except CorpusError as err:
            raise NeighboursError(str(err)) from None
        read += len(found)
        pairs += [((i, n), Pair(normalise(p.src), normalise(p.tgt), p.origin)) for n, p in enumerate(found)]
    held = {(p.src, p.tgt) for where, p in pairs if where in skip}  # their duplicates were held out with them
    kept = [p for _, p in pairs if (p.src, p.tgt) not in held]
    if data.get("reverse"):
        kept = [Pair(p.tgt, p.src, p.origin) for p in kept]
    names = ", ".join(Path(c).name for c in data["corpora"])
    origin = (
        f"the corpus this model was trained on ({names}, named in its {TRAIN_CONFIG_FILE}; this folder has no "
        f"splits/), less its dev and test pairs ({read - len(kept):,} with their duplicates, named in its "
        f"{SPLIT_RECORD_FILE})"
    )
    if data.get("distilled"):
        origin += "; it also trained on a teacher's translations of these sentences (data.distilled), not indexed"
    return TrainingPairs(capped(kept, cap), origin, path, len(kept))


def training_pairs(model_dir: Path, cap: int = MAX_PAIRS) -> TrainingPairs:
    """The pairs to index for the model in ``model_dir`` (see the module's docstring)."""
    model_dir = Path(model_dir)
    train = split_file(model_dir, "train")
    if train.is_file():
        try:
            pairs = list(tsv_pairs(train, skip_bad=True))
        except CorpusError as err:
            raise NeighboursError(str(err)) from None
        if not pairs:
            raise NeighboursError(f"{train}: no source<TAB>target pairs")
        return TrainingPairs(capped(pairs, cap), "this run's training pairs (splits/train.tsv)", train, len(pairs))
    if (model_dir / TRAIN_CONFIG_FILE).is_file():
        return corpus_pairs_of(model_dir, cap)
    raise NeighboursError(f"{model_dir}: no splits/train.tsv and no {TRAIN_CONFIG_FILE} naming its corpus")
