"""From corpus files to a run directory's data: cleaned pairs, a grouped split, a SentencePiece tokenizer."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from data.corpus import (
    CorpusError,
    Pair,
    ReadReport,
    Split,
    clean,
    match_key,
    pair_lines,
    read_pairs_file,
    sentence_pairs,
    split,
    swapped,
    write_pairs,
)
from data.entities import EntityConfig, EntityFinder, EntityPool
from data.noise import add_noise
from data.split_record import SPLIT_RECORD_FILE, read_corpora, read_record, write_record
from data.tokenizer import Tokenizer, train_tokenizer
from model.config import ConfigError
from model.run_dir import DATA_REPORT_FILE, NAME_GUARD_FILE, SPLITS_DIR, TRAIN_CONFIG_FILE, split_file
from training.checkpoint import FULL_DISK
from training.guided_alignment import write_alignments
from training.train_config import DataConfig, read_saved_config
from translate import name_guard

log = logging.getLogger("training")
SPLITS = ("train", "dev", "test")
Mixer = Callable[[Split, ReadReport], Split]  # the split, and its report to count in -> the split trained on


def load_and_split(d: DataConfig, report: ReadReport, pinned: Split | None = None) -> Split:
    """Read every corpus, clean, and split deterministically (same config -> same split, on any machine). With
    ``pinned`` (a parent model's split, see ``parent_split``) dev and test are the parent's, exactly, and train is every
    other pair that shares no sentence with them. With ``d.reverse`` the pairs are swapped last."""
    pairs = clean([pair for corpus in read_corpora(d, report) for pair in corpus], d.clean, report)
    if len(pairs) < 3:
        raise CorpusError(f"{', '.join(d.corpora)}: only {len(pairs)} usable pairs after cleaning")
    if pinned is not None and d.reverse:
        pinned = swapped(pinned)  # the parent's pairs in the corpus's order, as ``pairs`` are read
    if pinned is not None:
        parts = Split(without(pairs, pinned.dev + pinned.test, report), pinned.dev, pinned.test)
    else:
        dev_size = min(d.dev_size, max(1, len(pairs) // 10))
        test_size = min(d.test_size, max(1, len(pairs) // 10))
        parts = split(pairs, dev_size, test_size, d.split_seed)
    if d.split_sentences:  # added to train only; dev and test stay whole pairs
        added = sentence_pairs(parts.train, d.clean, parts.dev + parts.test, report)
        parts = dataclasses.replace(parts, train=parts.train + added)
    if not parts.dev or not parts.test:
        raise CorpusError(
            f"{', '.join(d.corpora)}: no pairs left for the {'dev' if not parts.dev else 'test'} split "
            "(dev and test take whole groups of at most 4 pairs that share no sentence with training; a corpus "
            "whose pairs all share a sentence forms one group): add pairs with other sentences"
        )
    return swapped(parts) if d.reverse else parts


def without(pairs: list[Pair], avoid: list[Pair], report: ReadReport) -> list[Pair]:
    """The pairs that share no source and no target sentence (``match_key``) with ``avoid``; counts each drop."""
    src_keys, tgt_keys = {match_key(p.src) for p in avoid}, {match_key(p.tgt) for p in avoid}
    kept = []
    for index, pair in enumerate(pairs):
        if match_key(pair.src) in src_keys or match_key(pair.tgt) in tgt_keys:
            report.skip("in the pinned dev or test split", pair.origin or f"pair {index + 1}")
        else:
            kept.append(pair)
    report.kept -= len(pairs) - len(kept)
    return kept


def model_data(model_dir: Path) -> DataConfig | None:
    """The data configuration a model directory was trained with (its train_config.json), None without one."""
    path = model_dir / TRAIN_CONFIG_FILE
    if not path.is_file():
        return None
    try:
        return read_saved_config(path).data
    except ConfigError as err:
        raise CorpusError(f"cannot read the model's data configuration: {err}") from None


def model_split(model_dir: Path) -> Split:
    """The split a model was trained and scored on: its run's ``splits/``, else its dev and test pairs read back
    from the corpus by its ``split.json`` (data/split_record.py) and every other pair as training, checked
    against the sha256 in its data report."""
    if all(split_file(model_dir, name).is_file() for name in SPLITS):
        return Split(*(read_pairs_file(split_file(model_dir, name)) for name in SPLITS))
    data = model_data(model_dir)
    if data is None:
        raise CorpusError(f"{model_dir}: no splits/ and no {TRAIN_CONFIG_FILE} to make its split from")
    if not (model_dir / SPLIT_RECORD_FILE).is_file():
        raise CorpusError(
            f"{model_dir}: no splits/ and no {SPLIT_RECORD_FILE} (its dev and test pairs as corpus lines)"
        )
    dev, test = read_record(model_dir, data)
    parts = load_and_split(data, ReadReport(), Split([], dev, test))
    report_file = model_dir / DATA_REPORT_FILE
    report = json.loads(report_file.read_text(encoding="utf-8")) if report_file.is_file() else {}
    for name in ("dev", "test"):
        if split_fingerprint(getattr(parts, name)) != report.get("sha256", {}).get(name):
            raise CorpusError(
                f"{model_dir}: its {name} split read from {SPLIT_RECORD_FILE} is not the one in {DATA_REPORT_FILE} "
                "(sha256 differs): other cleaning code, or another corpus file"
            )
    return parts


def parent_split(parent: Path, d: DataConfig) -> Split | None:
    """The split a parent model (``run.init_from``) was trained and scored on (``model_split``), when the child
    reads the same corpora the same way round; ``None`` otherwise (another corpus: nothing to pin)."""
    parent_data = model_data(parent)
    if parent_data is None or not _same_corpora(parent_data, d):
        return None
    try:
        return model_split(parent)
    except CorpusError as err:
        raise CorpusError(
            f"{err}; a child scored on another split would report meaningless figures. Set "
            "data.pin_parent_split = false to make a new split, checked against the parent's training pairs"
        ) from None


def split_source(d: DataConfig, parent: Path | None) -> tuple[Path | None, Split | None, bool]:
    """Where a run's dev and test pairs come from: (the model, its split, whether they are kept exactly); a
    ``parent``'s split not kept (``data.pin_parent_split`` false) is returned to check the new split against."""
    if d.split_from:
        source = Path(d.split_from)
        source_data = model_data(source)
        if source_data is None:
            raise CorpusError(
                f"data.split_from = {d.split_from!r}: no {TRAIN_CONFIG_FILE} there (a model or run folder)"
            )
        if not _same_corpora(source_data, d, either_way=True):
            raise CorpusError(
                f"data.split_from = {d.split_from!r} was trained on other corpora ({source / TRAIN_CONFIG_FILE}): "
                "it has no dev and test pairs of this corpus to keep"
            )
        kept = model_split(source)  # CorpusError, naming the folder, if it cannot be made again
        # A model of the other direction (es-en for an en-es run) keeps the same pairs, the other way round.
        return source, swapped(kept) if source_data.reverse != d.reverse else kept, True
    pinned = parent_split(parent, d) if parent is not None else None
    return parent, pinned, pinned is not None and d.pin_parent_split


def _same_corpora(a: DataConfig, b: DataConfig, either_way: bool = False) -> bool:
    """Whether two runs read the same corpus files (wherever named from) the same way round (``either_way``: as
    the same language pair, whichever direction each trains)."""
    same_files = sorted(map(_resolved, a.corpora)) == sorted(map(_resolved, b.corpora))
    if either_way:
        return same_files and (a.src_lang, a.tgt_lang) == (b.src_lang, b.tgt_lang)
    return same_files and a.direction == b.direction


def _resolved(corpus: str) -> str:
    return str(Path(corpus).expanduser().resolve())


def overlap(parts: Split, parent: Split) -> int:
    """How many dev and test pairs share a source or target sentence with the parent's training pairs."""
    src_keys, tgt_keys = {match_key(p.src) for p in parent.train}, {match_key(p.tgt) for p in parent.train}
    return sum(match_key(p.src) in src_keys or match_key(p.tgt) in tgt_keys for p in parts.dev + parts.test)


def split_fingerprint(pairs: list[Pair]) -> str:
    """sha256 of a split as written to disk: lets a benchmark prove it regenerated the same test set."""
    return hashlib.sha256(pair_lines(pairs).encode()).hexdigest()


def prepare_data(
    d: DataConfig,
    run_dir: Path,
    tokenizer: Tokenizer | None = None,
    align: bool = False,
    parent: Path | None = None,
    mix: Mixer | None = None,
) -> None:
    """Read, clean and split the corpora (dev and test kept from a model as ``split_source`` says), let ``mix`` change
    the training pairs (workshop/student.py), train the tokenizer (or keep the given one, e.g. the parent model's when
    fine-tuning) and, with ``align``, write guided alignment's links; everything goes into ``run_dir``."""
    report = ReadReport()
    source, pinned, keep = split_source(d, parent)
    parts = load_and_split(d, report, pinned if keep else None)
    if pinned is not None and not keep and (shared := overlap(parts, pinned)):
        raise CorpusError(
            f"{shared} of the new split's {len(parts.dev) + len(parts.test)} dev and test pairs share a sentence "
            f"with {parent}'s training pairs: their scores would mean nothing. Keep data.pin_parent_split = true "
            "(the parent's dev and test pairs, exactly)"
        )
    parts = mix(parts, report) if mix is not None else parts
    if keep:
        log.info("dev and test pinned to %s's split (%d and %d pairs)", source, len(parts.dev), len(parts.test))
    sizes = {name: len(getattr(parts, name)) for name in SPLITS}
    fingerprints = {name: split_fingerprint(getattr(parts, name)) for name in SPLITS}
    summary = {**report.as_dict(), "splits": sizes, "sha256": fingerprints}
    if d.entities.enabled:
        summary["entities"] = entity_report(parts.train, d.entities)
    log.info("pairs: read %d, kept %d, skipped %s; split %s", report.read, report.kept, dict(report.skipped), sizes)
    if tokenizer is None:
        # With source noise on, the vocabulary also sees one noised draw of the source side (the forms training sees).
        rng = random.Random(d.split_seed)
        drawn = ((p.src, add_noise(p.src, d.noise, rng)) for p in parts.train) if d.noise.enabled else ()
        extra_src = [noised for clean, noised in drawn if noised != clean]
        tokenizer = train_tokenizer(parts.train, d.vocab_size, d.joint_vocab, extra_src, d.case_markup)
    elif d.case_markup:
        tokenizer = tokenizer.with_case_markup()
    try:
        (run_dir / SPLITS_DIR).mkdir(parents=True, exist_ok=True)
        for name in SPLITS:
            write_pairs(getattr(parts, name), split_file(run_dir, name))
        (run_dir / DATA_REPORT_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        write_record(d, parts.dev, parts.test, run_dir)
        tokenizer.save(run_dir)
        if len(parts.train) >= name_guard.MIN_PAIRS:  # a model too small to translate gains nothing from one
            name_guard.build(parts.train, d.direction[0]).save(run_dir / NAME_GUARD_FILE)
        if align:
            write_alignments(parts.train, tokenizer, run_dir)
    except OSError as err:
        if err.errno not in FULL_DISK:
            raise
        removed = remove_prepared(run_dir)
        raise CorpusError(
            f"{run_dir}: no space left while writing the prepared data ({err.strerror}); removed the partial "
            f"files ({', '.join(removed) or 'none'}): free some space and start the run again"
        ) from None


def entity_report(train: list[Pair], entities: EntityConfig) -> dict:
    """What data.entities will swap: the training pairs holding a shared name or number, and the names found."""
    finder = EntityFinder.from_pairs(train, EntityPool.build(held=None))
    with_entity = [found for p in train if (found := finder.shared(p))]
    counts = Counter(e for found in with_entity for e in found)
    return {
        "pairs with a name or number on both sides": len(with_entity),
        "expected swapped per epoch": round(entities.p * len(with_entity)),
        "names found": len(finder.names),
        "of them people": len(finder.people),
        "commonest": dict(counts.most_common(12)),
    }


def remove_prepared(run_dir: Path) -> list[str]:
    """Delete what ``prepare_data`` writes (a half-written split or tokenizer must never look usable)."""
    written = (run_dir / SPLITS_DIR, run_dir / DATA_REPORT_FILE, run_dir / SPLIT_RECORD_FILE, *Tokenizer.files(run_dir))
    removed = [path for path in written if path.exists()]
    for path in removed:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    return [path.name for path in removed]
