"""From corpus files to a run directory's data: cleaned pairs, a grouped split, a SentencePiece tokenizer."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
from pathlib import Path

from data.corpus import (
    CleanConfig,
    CorpusError,
    Pair,
    ReadReport,
    Split,
    clean,
    exclude,
    read_corpus,
    read_held_out,
    sentence_pairs,
    split,
    swapped,
    write_pairs,
)
from data.noise import add_noise
from data.tokenizer import train_tokenizer
from model.run_dir import DATA_REPORT_FILE, SPLITS_DIR, split_file
from model.tokenizer import Tokenizer
from training.config import DataConfig
from training.guided_alignment import write_alignments

log = logging.getLogger("training")
SPLITS = ("train", "dev", "test")


def load_and_split(d: DataConfig, report: ReadReport) -> Split:
    """Read every corpus, clean, and split deterministically (same config -> same split, on any machine).

    With ``d.reverse`` the pairs are swapped last: the same split as the forward direction's, the other way round
    (``data.exclude`` matches the ``src_lang`` side, as read)."""
    pairs: list[Pair] = []
    for corpus in d.corpora:
        pairs += read_corpus(
            Path(corpus), d.format, d.src_lang, d.tgt_lang, report, d.skip_bad_lines, d.columns or None
        )
    clean_config = CleanConfig(d.min_tokens, d.max_tokens, d.max_ratio)
    pairs = clean(pairs, clean_config, report)
    held_out = set().union(*(read_held_out(Path(path)) for path in d.exclude))
    if held_out:
        pairs = exclude(pairs, held_out, report)
    if len(pairs) < 3:
        raise CorpusError(f"{', '.join(d.corpora)}: only {len(pairs)} usable pairs after cleaning")
    dev_size = min(d.dev_size, max(1, len(pairs) // 10))
    test_size = min(d.test_size, max(1, len(pairs) // 10))
    parts = split(pairs, dev_size, test_size, d.split_seed)
    if held_out:  # typing noise drops commas: "Estoy bien, gracias." would teach the held-out "estoy bien gracias"
        parts = dataclasses.replace(parts, train=exclude(parts.train, held_out, report, drop_commas=True))
    if d.split_sentences:  # added to train only; dev and test stay whole pairs, as before
        added = sentence_pairs(parts.train, clean_config, held_out, parts.dev + parts.test, report)
        parts = dataclasses.replace(parts, train=parts.train + added)
    return swapped(parts) if d.reverse else parts


def split_fingerprint(pairs: list[Pair]) -> str:
    """sha256 of a split as written to disk: lets a benchmark prove it regenerated the same test set."""
    return hashlib.sha256("".join(f"{p.src}\t{p.tgt}\n" for p in pairs).encode()).hexdigest()


def prepare_data(d: DataConfig, run_dir: Path, tokenizer: Tokenizer | None = None, align: bool = False) -> None:
    """Read, clean and split the corpora, train the tokenizer (or keep the given one, e.g. the parent model's
    when fine-tuning) and, with ``align``, write guided alignment's links; everything goes into ``run_dir``."""
    report = ReadReport()
    parts = load_and_split(d, report)
    (run_dir / SPLITS_DIR).mkdir(parents=True, exist_ok=True)
    for name in SPLITS:
        write_pairs(getattr(parts, name), split_file(run_dir, name))
    sizes = {name: len(getattr(parts, name)) for name in SPLITS}
    fingerprints = {name: split_fingerprint(getattr(parts, name)) for name in SPLITS}
    summary = {**report.as_dict(), "splits": sizes, "sha256": fingerprints}
    (run_dir / DATA_REPORT_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    log.info("pairs: read %d, kept %d, skipped %s; split %s", report.read, report.kept, dict(report.skipped), sizes)
    if tokenizer is None:
        # With source noise on, the vocabulary also sees one noised draw of the source side (the forms training sees).
        rng = random.Random(d.split_seed)
        drawn = ((p.src, add_noise(p.src, d.noise, rng)) for p in parts.train) if d.noise.enabled else ()
        extra_src = [noised for clean, noised in drawn if noised != clean]
        tokenizer = train_tokenizer(parts.train, d.vocab_size, d.joint_vocab, extra_src, d.case_markup)
    elif d.case_markup:
        tokenizer = tokenizer.with_case_markup()
    tokenizer.save(run_dir)
    if align:
        write_alignments(parts.train, tokenizer, run_dir)
