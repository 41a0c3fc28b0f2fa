"""Parallel corpora: read pairs (with a report of every skipped line), clean them, split them."""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


class CorpusError(ValueError):
    """Bad input that the user did not ask us to skip; the message names file, line and expectation."""


@dataclass(frozen=True)
class Pair:
    src: str
    tgt: str


@dataclass
class ReadReport:
    """What reading and cleaning did: pairs read and kept, lines skipped by reason with examples."""

    read: int = 0
    kept: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, where: str, max_examples: int = 3) -> None:
        self.skipped[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < max_examples:
            shown.append(where)

    def as_dict(self) -> dict:
        return {"read": self.read, "kept": self.kept, "skipped": dict(self.skipped), "examples": self.examples}


def _bad(report: ReadReport | None, skip_bad: bool, reason: str, where: str, message: str) -> None:
    """Raise CorpusError, or count the line as skipped when the user asked to skip bad lines."""
    if not skip_bad or report is None:
        raise CorpusError(f"{where}: {message}")
    report.skip(reason, where)


def decoded_lines(path: Path, report: ReadReport | None, skip_bad: bool) -> list[tuple[int, str | None]]:
    """(line number, text) for each line of ``path``; text is None for a skipped undecodable line."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    raw = path.read_bytes()
    if not raw.strip():
        raise CorpusError(f"{path}: file is empty (expected one sentence pair per line)")
    if raw.startswith(b"\xef\xbb\xbf"):
        _bad(report, skip_bad, "byte-order mark", f"{path}:1", "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM")
        raw = raw[3:]
    lines = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if line.endswith(b"\r"):
            _bad(report, skip_bad, "CRLF line ending", f"{path}:{number}", "has a Windows (CRLF) line ending; expected LF")
            line = line[:-1]
        try:
            lines.append((number, line.decode("utf-8")))
        except UnicodeDecodeError as err:
            _bad(report, skip_bad, "invalid UTF-8", f"{path}:{number}", f"invalid UTF-8 at byte {err.start}")
            lines.append((number, None))
    if lines and lines[-1][1] == "":  # the final newline
        lines.pop()
    return lines


def read_tsv(
    path: Path, src_column: int = 0, tgt_column: int = 1, n_columns: int | None = 2,
    report: ReadReport | None = None, skip_bad: bool = False,
) -> list[Pair]:
    """Pairs from a tab-separated file (``spanish<TAB>english`` by default; other column orders by index)."""
    report = report if report is not None else ReadReport()
    pairs = []
    for number, text in decoded_lines(path, report, skip_bad):
        if text is None:
            continue
        report.read += 1
        where = f"{path}:{number}"
        fields = text.split("\t")
        wanted = n_columns or max(src_column, tgt_column) + 1
        if len(fields) != wanted if n_columns else len(fields) < wanted:
            _bad(report, skip_bad, "wrong number of fields", where, f"expected {wanted} tab-separated fields, found {len(fields)}")
            continue
        src, tgt = fields[src_column].strip(), fields[tgt_column].strip()
        if not src or not tgt:
            _bad(report, skip_bad, "empty side", where, f"empty {'source' if not src else 'target'} sentence")
            continue
        pairs.append(Pair(src, tgt))
    return pairs


# ----------------------------------------------------------------------------------------- cleaning

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Unicode NFC and single spaces; what the model sees."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def match_key(text: str) -> str:
    """Key under which two sentences count as "the same" for the split: lowercase, no final punctuation."""
    key = normalise(text).lower()
    while key and unicodedata.category(key[-1]).startswith(("P", "Z")):
        key = key[:-1]
    return key


@dataclass(frozen=True)
class CleanConfig:
    min_tokens: int = 1
    max_tokens: int = 80  # whitespace tokens per side
    max_ratio: float = 3.0  # longer side / shorter side, in whitespace tokens


def clean(pairs: list[Pair], config: CleanConfig, report: ReadReport) -> list[Pair]:
    """NFC + whitespace cleanup, exact-duplicate removal, length and ratio filters; counts every drop."""
    seen = set()
    kept = []
    for index, pair in enumerate(pairs):
        pair = Pair(normalise(pair.src), normalise(pair.tgt))
        n_src, n_tgt = len(pair.src.split()), len(pair.tgt.split())
        where = f"pair {index + 1}"
        if pair in seen:
            report.skip("duplicate pair", where)
        elif min(n_src, n_tgt) < config.min_tokens or max(n_src, n_tgt) > config.max_tokens:
            report.skip("length filter", where)
        elif max(n_src, n_tgt) / max(1, min(n_src, n_tgt)) > config.max_ratio and max(n_src, n_tgt) > 3:
            report.skip("length-ratio filter", where)
        else:
            seen.add(pair)
            kept.append(pair)
    report.kept = len(kept)
    return kept


# ----------------------------------------------------------------------------------------- splitting


@dataclass(frozen=True)
class Split:
    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]


def _groups(pairs: list[Pair]) -> list[list[int]]:
    """Connected components of pairs linked by a shared source key or a shared target key (union-find)."""
    parent = list(range(len(pairs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_seen: dict[tuple[str, str], int] = {}
    for i, pair in enumerate(pairs):
        for key in (("src", match_key(pair.src)), ("tgt", match_key(pair.tgt))):
            j = first_seen.setdefault(key, i)
            parent[find(i)] = find(j)
    components: dict[int, list[int]] = {}
    for i in range(len(pairs)):
        components.setdefault(find(i), []).append(i)
    return list(components.values())


def split(pairs: list[Pair], dev_size: int, test_size: int, seed: int = 1234) -> Split:
    """Deterministic train/dev/test split in which no source and no target sentence (by ``match_key``)
    appears in two splits. Groups are shuffled with ``seed``; dev and test take whole groups of at most
    4 pairs until they hold ``dev_size`` / ``test_size`` pairs (large groups stay in train)."""
    groups = sorted(_groups(pairs), key=lambda g: hashlib.sha1(pairs[g[0]].src.encode()).hexdigest())
    random.Random(seed).shuffle(groups)
    held: dict[str, list[Pair]] = {"test": [], "dev": []}
    train = []
    for group in groups:
        target = next((name for name, size in (("test", test_size), ("dev", dev_size)) if len(held[name]) < size), None)
        if target is not None and len(group) <= 4:
            held[target].extend(pairs[i] for i in group)
        else:
            train.extend(pairs[i] for i in group)
    random.Random(seed + 1).shuffle(train)
    return Split(train, held["dev"], held["test"])


def write_pairs(pairs: list[Pair], path: Path) -> None:
    """Write ``src<TAB>tgt`` lines (the project's own TSV layout)."""
    Path(path).write_text("".join(f"{p.src}\t{p.tgt}\n" for p in pairs), encoding="utf-8")


def read_corpus(
    path: Path, fmt: str = "auto", src_lang: str = "es", tgt_lang: str = "en",
    report: ReadReport | None = None, skip_bad: bool = False,
) -> list[Pair]:
    """Read one corpus in any supported format (``auto`` detects it from the file)."""
    if fmt not in ("auto", "tsv"):
        raise CorpusError(f"{path}: format {fmt!r} is not supported yet")
    return read_tsv(Path(path), report=report, skip_bad=skip_bad)
