"""Validate a corpus before training: read and clean it as training will, one line at a time, and report what was
kept and why not. Memory stays a small multiple of the longest line plus a few bytes per kept pair: kept pairs go
to a file, duplicates are found by 8-byte hashes, and only a few examples are kept per reason."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO, TextIO

import numpy as np

from data.corpus import (
    CleanConfig,
    CorpusError,
    Pair,
    ReadReport,
    _groups,
    clean,
    corpus_pairs,
    detect_format,
    match_key,
)
from data.data_config import DataConfig
from data.languages import SRC_LANG, TGT_LANG, header_names
from data.readers import CODEC_NAMES, Reading, head_text, moses_paths, text_codec
from model.run_dir import CORPUS_CHECK_FILE, CORPUS_FILE
from model.weights import write_beside

MIN_PAIRS = 20  # below this, the dev and test splits would be a pair or two
MAX_UNREADABLE = 0.5  # more lines than this failing to read means the format or the columns are wrong
SAMPLE_SIZE = 8
BATCH = 1024  # pairs read and cleaned at a time
CHUNK = 4096  # hashes compared at a time, so that numpy's temporaries stay small
SMALL_GROUP = 4  # dev and test take only whole groups of at most this many pairs (data.corpus.split)
GROUPED_BYTES = 512  # memory data.corpus._groups takes per pair: the dev/test check groups at most
MIN_GROUPED = 5_000  # max(this, 2 bytes of kept pairs / GROUPED_BYTES) pairs with it (see holdout_problem)


@dataclass(frozen=True)
class CorpusSource:
    """What to read: a file (or a Moses prefix), its format, and the language of each tsv/anki column."""

    path: Path
    fmt: str = "auto"
    columns: tuple[str, ...] | None = None
    shown_as: tuple[tuple[str, str], ...] = ()  # (path on disk, name the user knows) for messages

    def display(self, text: str) -> str:
        """``text`` with staged file paths replaced by the names the user uploaded."""
        for path, name in sorted(self.shown_as, key=lambda item: -len(item[0])):
            text = text.replace(path, name)
        return text


@dataclass(frozen=True)
class Reason:
    reason: str
    count: int
    examples: tuple[str, ...]  # file:line


@dataclass(frozen=True)
class LengthStats:
    side: str
    min: int
    median: float
    mean: float
    p95: int
    max: int


@dataclass(frozen=True)
class CorpusCheck:
    problems: tuple[str, ...]  # empty when the corpus may be trained on
    fmt: str | None
    read: int = 0
    kept: int = 0
    skipped: tuple[Reason, ...] = ()
    repaired: tuple[Reason, ...] = ()
    lengths: tuple[LengthStats, ...] = ()
    sample: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def source_files(source: CorpusSource) -> list[Path]:
    """The files a source reads: one, or the two sides of a Moses pair."""
    fmt = source.fmt if source.fmt != "auto" else detected_format(source.path)
    return list(moses_paths(source.path, SRC_LANG, TGT_LANG)) if fmt == "moses" else [source.path]


def detected_format(path: Path) -> str | None:
    """The format ``read_corpus`` would detect, or None when the file cannot be found or read."""
    try:
        return detect_format(path, SRC_LANG, TGT_LANG)
    except (CorpusError, OSError):
        return None


class SeenPairs:
    """Hashes of the pairs kept so far, in a few sorted runs: 8 bytes a pair instead of a set of Pair objects. Python's
    own 64-bit string hash is enough (a collision: one in 10^19 per pair of pairs), and never leaves the process."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []  # sorted int64, each run at least twice as long as the next

    def first_seen(self, digests: np.ndarray) -> np.ndarray:
        """Which of ``digests`` (distinct among themselves) were not seen before; all are remembered."""
        new = np.ones(len(digests), dtype=bool)
        for run in self.runs:
            new &= ~_within(digests, run)
        if new.any():
            self.runs.append(np.sort(digests[new]))
        while len(self.runs) > 1 and len(self.runs[-2]) < 2 * len(self.runs[-1]):
            last = self.runs.pop()
            merged = np.concatenate((self.runs.pop(), last))
            merged.sort()
            self.runs.append(merged)
        return new


def _within(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Which ``values`` occur in the sorted array ``ordered``, a chunk at a time."""
    found = np.zeros(len(values), dtype=bool)
    if len(ordered):
        for start in range(0, len(values), CHUNK):
            part = values[start : start + CHUNK]
            at = np.minimum(np.searchsorted(ordered, part), len(ordered) - 1)
            found[start : start + CHUNK] = ordered[at] == part
    return found


def _read_into(
    source: CorpusSource, config: CleanConfig, kept: TextIO, read: ReadReport, cleaned: ReadReport
) -> dict[str, Counter[int]]:
    """Read and clean ``source`` as training will, writing each kept pair to ``kept``; each side's length histogram."""
    pairs = corpus_pairs(source.path, source.fmt, Reading(SRC_LANG, TGT_LANG, True, source.columns), read)
    seen, lengths = SeenPairs(), {"src": Counter[int](), "tgt": Counter[int]()}
    while batch := list(islice(pairs, BATCH)):
        batch = clean(batch, config, cleaned)  # the same filters; duplicates within the batch dropped here
        lines = [f"{p.src}\t{p.tgt}\n" for p in batch]
        digests = np.fromiter(map(hash, lines), np.int64, len(lines))
        for pair, line, new in zip(batch, lines, seen.first_seen(digests).tolist(), strict=True):
            if not new:
                cleaned.skip("duplicate pair", pair.origin)
                continue
            kept.write(line)
            lengths["src"][pair.src.count(" ") + 1] += 1  # clean() leaves single spaces between tokens
            lengths["tgt"][pair.tgt.count(" ") + 1] += 1
    read.kept = cleaned.kept = lengths["src"].total()
    kept.flush()
    return lengths


def _pairs_in(kept: TextIO) -> Iterator[tuple[str, str]]:
    """The (source, target) lines written by ``_read_into``, from the start."""
    kept.seek(0)
    for line in kept:
        src, tgt = line.removesuffix("\n").split("\t")
        yield src, tgt


def _reasons(counts: Counter, examples: dict[str, list[str]], source: CorpusSource) -> tuple[Reason, ...]:
    return tuple(
        Reason(r, n, tuple(source.display(e) for e in examples.get(r, ())))
        for r, n in sorted(counts.items(), key=lambda item: -item[1])
    )


def length_stats(lengths: dict[str, Counter[int]]) -> tuple[LengthStats, ...]:
    """Whitespace tokens per sentence on each side, from each side's histogram of lengths."""
    stats = []
    for side, label in (("src", f"source ({SRC_LANG})"), ("tgt", f"target ({TGT_LANG})")):
        every, n = sorted(lengths[side].elements()), lengths[side].total()  # 8 bytes a pair, as the hashes take
        if not n:
            continue
        median = every[n // 2] if n % 2 else (every[n // 2 - 1] + every[n // 2]) / 2
        mean = round(sum(every) / n, 1)
        stats.append(LengthStats(label, every[0], median, mean, every[min(n - 1, int(0.95 * n))], every[-1]))
    return tuple(stats)


def check_corpus(source: CorpusSource, config: CleanConfig, max_bytes: int | None = None) -> CorpusCheck:
    """Read and clean ``source`` as training would; ``problems`` say why it cannot be trained on."""
    for path in source_files(source):
        if max_bytes is not None and path.is_file() and path.stat().st_size > max_bytes:
            size = path.stat().st_size / 1024 / 1024
            limit = f"{max_bytes / 1024 / 1024:.0f} MB"
            return CorpusCheck((f"{source.display(str(path))} is {size:.1f} MB, over the {limit} limit",), None)
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as kept:
        return _check_into(source, config, kept)


def _check_into(source: CorpusSource, config: CleanConfig, kept: TextIO) -> CorpusCheck:
    """Check ``source``, leaving the kept pairs in ``kept``: the report the page shows, and what blocks training."""
    read, cleaned = ReadReport(), ReadReport()
    try:
        lengths = _read_into(source, config, kept, read, cleaned)
    except (CorpusError, OSError) as err:
        return CorpusCheck((source.display(str(err)),), detected_format(source.path))
    n, unreadable = read.kept, sum(read.skipped.values())
    problems = []
    if read.read and unreadable > MAX_UNREADABLE * read.read:
        worst = ", ".join(f"{r}: {count}" for r, count in read.skipped.most_common(2))
        problems.append(
            f"{unreadable} of {read.read} lines could not be read ({worst}); "
            "check the format and the source/target columns"
        )
    if n < MIN_PAIRS:
        problems.append(f"only {n} usable pairs after cleaning; training needs at least {MIN_PAIRS}")
    elif (problem := holdout_problem(kept, n)) is not None:
        problems.append(problem)
    step = max(1, n // SAMPLE_SIZE)
    return CorpusCheck(
        problems=tuple(problems),
        fmt=next(iter(read.formats.values()), None),
        read=read.read,
        kept=n,
        skipped=_reasons(read.skipped + cleaned.skipped, {**read.examples, **cleaned.examples}, source),
        repaired=_reasons(read.repaired, read.examples, source),
        lengths=length_stats(lengths),
        sample=tuple(islice(islice(_pairs_in(kept), 0, None, step), SAMPLE_SIZE)),
    )


def write_corpus(source: CorpusSource, config: CleanConfig, run_dir: Path) -> Path:
    """Write the kept pairs as ``corpus.tsv`` (what the run trains on) and the check beside it; returns the TSV. The
    pairs go to an atomic writer's file as they are checked: a failing corpus leaves no file and no new run folder."""

    def checked(file: BinaryIO) -> CorpusCheck:
        check = _check_into(source, config, kept := io.TextIOWrapper(file, encoding="utf-8", newline="\n"))
        kept.detach()  # flushed; the writer syncs and closes the file
        if not check.ok:
            raise CorpusError("; ".join(check.problems))
        return check

    made = not run_dir.is_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        check = write_beside(run_dir / CORPUS_FILE, checked)
    except BaseException:
        if made:
            run_dir.rmdir()
        raise
    record = {"source": source.display(str(source.path)), **dataclasses.asdict(check)}
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n"
    write_beside(run_dir / CORPUS_CHECK_FILE, lambda f: f.write(text.encode("utf-8")))
    return run_dir / CORPUS_FILE


# ----------------------------------------------------------------------------------------- dev and test


def _key_hashes(kept: TextIO, side: int, n: int) -> np.ndarray:
    """The hash of ``match_key`` (the split's sentence identity) of one side (0 source, 1 target) of every kept pair."""
    return np.fromiter((hash(match_key(pair[side])) for pair in _pairs_in(kept)), np.int64, n)


def _sharing(keys: np.ndarray) -> tuple[np.ndarray, bool]:
    """How many pairs share each pair's sentence (counted up to SMALL_GROUP + 1), and whether all pairs share one."""
    ordered = np.sort(keys)
    counts = np.empty(len(keys), dtype=np.uint8)
    for start in range(0, len(keys), CHUNK):
        part = keys[start : start + CHUNK]
        shared = np.searchsorted(ordered, part, "right") - np.searchsorted(ordered, part, "left")
        counts[start : start + CHUNK] = np.minimum(shared, SMALL_GROUP + 1)
    return counts, bool(ordered[0] == ordered[-1])


def _stars(keys: np.ndarray, shared: np.ndarray, other_shared: np.ndarray) -> np.ndarray:
    """Pairs in a group that is one sentence shared by at most SMALL_GROUP pairs whose other sentences are their own
    (or a pair alone): certainly small, found without grouping."""
    linked = keys[other_shared > 1]  # sentences with a pair whose other sentence is shared too
    linked.sort()
    return (shared <= SMALL_GROUP) & (other_shared == 1) & ~_within(keys, linked)


def holdout_problem(kept: TextIO, n: int) -> str | None:
    """Why ``data.corpus.split`` could not give both dev and test pairs from the ``n`` kept pairs, or None. The split
    keeps pairs that share a sentence together (``_groups``) and holds out only whole groups of at most SMALL_GROUP
    pairs. Counting how many pairs share each sentence settles most corpora (Tatoeba: 84% of pairs stand alone); the
    rest go through ``_groups`` when that fits in twice the kept pairs' size on disk (or ~2.5 MB), else the corpus is
    let through and training/prepare.py refuses it if its split comes out empty."""
    test_size = min(DataConfig.test_size, max(1, n // 10))  # as training/prepare.py sizes it, by default
    src = _key_hashes(kept, 0, n)
    src_shared, src_all = _sharing(src)
    del src
    tgt = _key_hashes(kept, 1, n)
    tgt_shared, tgt_all = _sharing(tgt)
    if src_all or tgt_all:
        side, lang = (0, f"source ({SRC_LANG})") if src_all else (1, f"target ({TGT_LANG})")
        sentence = next(_pairs_in(kept))[side]
        return (
            f"all {n} pairs share the {lang} sentence {sentence!r} (up to case and final punctuation), so no pair "
            "can be held out for the dev and test splits (pairs that share a sentence stay together, in training); "
            "add pairs with other sentences"
        )
    alone = int(np.count_nonzero((src_shared == 1) & (tgt_shared == 1)))  # a group of one pair
    if alone >= test_size + SMALL_GROUP:
        return None  # test takes at most test_size + 3 pairs: the rest of these go to dev
    big = (src_shared > SMALL_GROUP) | (tgt_shared > SMALL_GROUP)
    small, near_big = _stars(tgt, tgt_shared, src_shared), _within(tgt, np.sort(tgt[big]))
    del tgt
    src = _key_hashes(kept, 0, n)
    small |= _stars(src, src_shared, tgt_shared)
    near_big |= _within(src, np.sort(src[big]))
    del src
    held = int(small.sum())
    rest = ~small & ~big
    kept.seek(0, io.SEEK_END)
    if held >= test_size + SMALL_GROUP or int(rest.sum()) > max(MIN_GROUPED, 2 * kept.tell() // GROUPED_BYTES):
        return None  # enough for test and dev, or too many to group here
    rows = np.flatnonzero(rest)
    groups = _groups([Pair(s, t) for i, (s, t) in enumerate(_pairs_in(kept)) if rest[i]])
    near = near_big[rows]  # a group linked to a sentence of a large group is part of it
    held += sum(len(g) for g in groups if len(g) <= SMALL_GROUP and not near[g].any())
    if held == 0:
        return (
            f"none of the {n} pairs can be held out for the dev and test splits: each shares a sentence, directly or "
            f"through other pairs, with more than {SMALL_GROUP} pairs, and such groups stay together in training; "
            "add pairs with other sentences"
        )
    if held <= test_size:
        return (
            f"only {held} of the {n} pairs can be held out (the others share a sentence with more than "
            f"{SMALL_GROUP} pairs, and such groups stay together in training): the test split takes them all (it "
            f"wants {test_size}), leaving none for the dev split; add pairs with other sentences"
        )
    return None


# ----------------------------------------------------------------------------------------- choosing columns


def peek_rows(path: Path, n: int = 20) -> list[list[str]]:
    """The first ``n`` non-blank lines split on tabs (for choosing columns); undecodable bytes replaced."""
    try:
        head = head_text(path, 256 * 1024)
    except OSError:
        return []  # the check says why
    return [line.rstrip("\r").split("\t") for line in head.splitlines() if line.strip()][:n]


def column_names(n_columns: int, src: int, tgt: int, roles: tuple[str, str] = (SRC_LANG, TGT_LANG)) -> tuple[str, ...]:
    """Names for ``n_columns`` columns: ``roles`` (the tsv reader's languages) at ``src`` and ``tgt``."""
    if src == tgt or not (0 <= src < n_columns and 0 <= tgt < n_columns):
        raise CorpusError(f"choose two different columns out of {n_columns}")
    return tuple(roles[0] if i == src else roles[1] if i == tgt else f"column{i + 1}" for i in range(n_columns))


def csv_header(path: Path) -> list[str]:
    """The column names in a CSV file's first line (empty when unreadable)."""
    try:
        return next(csv.reader(io.StringIO(head_text(path), newline="")))
    except (csv.Error, StopIteration, OSError):
        return []


def csv_default_columns(header: list[str]) -> tuple[int, int]:
    """The source and target columns a header names (``es``/``spanish``/``source``...), else the first two."""

    def find(lang: str, role: tuple[str, ...]) -> int | None:
        wanted = {*header_names(lang), *role}
        return next((i for i, name in enumerate(header) if name.strip().lower() in wanted), None)

    src, tgt = find(SRC_LANG, ("source", "src")), find(TGT_LANG, ("target", "tgt"))
    if src is None or tgt is None or src == tgt:
        return 0, min(1, max(0, len(header) - 1))
    return src, tgt


def relabel_csv(path: Path, src: int, tgt: int, out_dir: Path) -> Path:
    """A copy of a CSV file whose header names column ``src`` "source" and ``tgt`` "target" (other lines as they are)."""
    names = column_names(len(csv_header(path)), src, tgt, ("source", "target"))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{path.stem}.columns-{src + 1}-{tgt + 1}.csv"
    if out.is_file() and out.stat().st_mtime >= path.stat().st_mtime:
        return out
    codec = text_codec(path)  # UTF-16/32, by its byte-order mark: the copy is UTF-8, as training expects
    encoding, errors = (codec[:6], "strict") if codec else ("utf-8", "surrogateescape")  # bad bytes kept as they are
    try:
        with (
            open(path, encoding=encoding, errors=errors, newline="") as original,
            open(out, "w", encoding="utf-8", errors=errors, newline="") as copy,
        ):
            first = original.readline()
            copy.write(",".join(names) + ("\r\n" if first.endswith("\r\n") else "\n"))
            shutil.copyfileobj(original, copy)
    except UnicodeDecodeError as err:
        out.unlink(missing_ok=True)
        raise CorpusError(f"{path}: invalid {CODEC_NAMES[codec]} ({err.reason}); save the file as UTF-8") from None
    return out
