"""Which training pairs a model's neighbour index is built over: the ones its training read, as
``training.prepare.model_split`` gives them back (its run's ``splits/train.tsv``, else its corpus less the dev and
test pairs its ``split.json`` records), at most ``MAX_PAIRS``."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from data.readers import CorpusError, Pair
from model.run_dir import DATA_REPORT_FILE, SPLIT_RECORD_FILE, split_file
from training.prepare import model_data, model_split

MAX_PAIRS = 120_000  # the shipped model's training split (118,825 pairs) fits whole
SEED = 1  # a split over the cap is sampled, the same way every build


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


def training_pairs(model_dir: Path, cap: int = MAX_PAIRS) -> TrainingPairs:
    """The pairs to index for the model in ``model_dir`` (see the module's docstring)."""
    model_dir = Path(model_dir)
    try:
        pairs, data = model_split(model_dir).train, model_data(model_dir)
    except CorpusError as err:
        raise NeighboursError(str(err)) from None
    if not pairs:
        raise NeighboursError(f"{model_dir}: its training split holds no pairs")
    if split_file(model_dir, "train").is_file():
        origin, source = "this run's training pairs (splits/train.tsv)", split_file(model_dir, "train")
    else:
        names = ", ".join(Path(c).name for c in data.corpora)
        origin = (
            f"the training pairs of its corpus ({names}): all but the dev and test pairs in its {SPLIT_RECORD_FILE}"
        )
        source = Path(data.corpora[0])
        report = json.loads((model_dir / DATA_REPORT_FILE).read_text(encoding="utf-8"))  # model_split checked it
        if (more := report.get("splits", {}).get("train", 0) - len(pairs)) > 0:
            origin += f"; {more:,} more pairs it trained on (a teacher's translations, {DATA_REPORT_FILE}) not indexed"
    return TrainingPairs(capped(pairs, cap), origin, source, len(pairs))
