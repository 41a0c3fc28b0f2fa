"""A model's dev and test pairs as corpus positions (``split.json``): keeping a parent's split is reading a file.

The record holds each corpus file's sha256 and, for every dev and test pair, which corpus it came from and its
position among that corpus's pairs as read — no corpus text. A model folder carries it (``training.export``
copies it), so a child trained with ``--init-from`` and every scoring tool get exactly the parent's dev and test
pairs back from the corpus file, checked against the sha256 of the split in the data report.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from data.corpus import CorpusError, Pair, ReadReport, normalise, read_corpus
from data.data_config import DataConfig
from data.readers import Reading
from model.bounded_read import QUOTE, read_json
from model.run_dir import SPLIT_RECORD_FILE

MAX_RECORD_BYTES = 64 << 20  # of split.json: two small numbers per dev and test pair


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_corpora(d: DataConfig, report: ReadReport | None = None) -> list[list[Pair]]:
    """Every corpus's pairs as read (before cleaning), in the corpus pair's own order (not swapped)."""
    how = Reading(d.src_lang, d.tgt_lang, d.skip_bad_lines, d.columns or None)
    return [read_corpus(Path(corpus), d.format, how, report) for corpus in d.corpora]


def write_record(d: DataConfig, dev: list[Pair], test: list[Pair], run_dir: Path) -> None:
    """Write the record of ``dev`` and ``test`` (in the model's direction), found among ``d.corpora``'s pairs by their
    text as cleaning reads it (the first of equal pairs: the one cleaning keeps)."""
    where: dict[tuple[str, str], tuple[int, int]] = {}
    for i, pairs in enumerate(read_corpora(d)):
        for n, p in enumerate(pairs):
            key = (normalise(p.tgt), normalise(p.src)) if d.reverse else (normalise(p.src), normalise(p.tgt))
            where.setdefault(key, (i, n))
    missing = [p for p in dev + test if (p.src, p.tgt) not in where]
    if missing:
        raise CorpusError(f"{missing[0].src!r}: a dev or test pair not found in {', '.join(d.corpora)}")
    record = {
        "corpora": [{"file": Path(c).name, "sha256": file_sha256(Path(c))} for c in d.corpora],
        "dev": [where[p.src, p.tgt] for p in dev],
        "test": [where[p.src, p.tgt] for p in test],
    }
    (run_dir / SPLIT_RECORD_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")


def read_record(model_dir: Path, d: DataConfig) -> tuple[list[Pair], list[Pair]]:
    """The dev and test pairs a model folder's record names, read from ``d.corpora`` (in the model's direction);
    a corpus file whose sha256 is not the recorded one is refused, naming it."""
    path = model_dir / SPLIT_RECORD_FILE
    record = read_json(path, CorpusError, MAX_RECORD_BYTES)
    try:
        corpora, dev, test = [str(entry["sha256"]) for entry in record["corpora"]], record["dev"], record["test"]
    except (KeyError, TypeError) as err:
        raise CorpusError(f"{path}: not a split record (no {str(err)[:QUOTE]}); expected corpora, dev, test") from None
    if len(corpora) != len(d.corpora):
        raise CorpusError(f"{path}: records {len(corpora)} corpora, the model was trained on {len(d.corpora)}")
    for corpus, recorded in zip(d.corpora, corpora, strict=True):
        if not Path(corpus).is_file():
            raise CorpusError(f"{corpus}: corpus file not found (the model's dev and test pairs are read from it)")
        if file_sha256(Path(corpus)) != recorded:
            raise CorpusError(f"{corpus}: not the corpus file the model was trained on (sha256 differs from {path})")
    pairs = read_corpora(d)

    def pick(entries: list[list[int]]) -> list[Pair]:
        try:
            chosen = [pairs[i][n] for i, n in entries]
        except (IndexError, TypeError, ValueError):
            raise CorpusError(f"{path}: a dev or test position not among the corpus pairs ([corpus, pair])") from None
        chosen = [Pair(normalise(p.src), normalise(p.tgt), p.origin) for p in chosen]  # as cleaning reads them
        return [Pair(p.tgt, p.src, p.origin) for p in chosen] if d.reverse else chosen

    return pick(dev), pick(test)
