"""Parallel corpora: read any supported format (readers in ``data.readers``), clean, split, write."""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from data import readers
from data.data_config import FORMATS, CleanConfig
from data.languages import SRC_LANG, TGT_LANG
from data.readers import DEFAULT_READING, CorpusError, Pair, Reading, ReadReport
from data.sentences import sentences
from data.tmx import tmx_pairs
from model.bounded_read import read_text, regular_size
from model.weights import write_beside

# ----------------------------------------------------------------------------------------- reading

ATTRIBUTION = re.compile(r"CC-BY|creativecommons|tatoeba|#\d+", re.IGNORECASE)  # the Anki third column


def detect_format(path: Path, src_lang: str = SRC_LANG, tgt_lang: str = TGT_LANG) -> str:
    """moses (a ``.es``/``.en`` sibling exists), csv or tmx (by extension, or an XML head naming <tmx>), anki (3
    columns, attribution last) or tsv."""
    path = Path(path)
    src_path, tgt_path = readers.moses_paths(path, src_lang, tgt_lang)
    if path.suffix in (f".{src_lang}", f".{tgt_lang}") or not path.exists():
        if src_path.is_file() or tgt_path.is_file():
            return "moses"
        if not path.exists():
            if path.is_symlink():  # a link to nowhere, or a loop: the reader's own words
                regular_size(path, CorpusError)
            moses = "" if path.suffix in (".tsv", ".txt", ".csv") else f" (nor {src_path} + {tgt_path}, a Moses pair)"
            raise CorpusError(f"{path}: file not found{moses}")
    if path.suffix.lower() in (".csv", ".tmx"):
        return path.suffix.lower()[1:]
    text = readers.head_text(path)
    if text.lstrip().startswith("<") and "<tmx" in text:
        return "tmx"
    head = text.splitlines()[:20]
    rows = [line.split("\t") for line in head if line.strip()]
    attributed = sum(len(row) == 3 and ATTRIBUTION.search(row[2]) is not None for row in rows)
    if rows and attributed >= len(rows) / 2:  # a bad line or two among the first rows does not change the layout
        return "anki"
    return "tsv"


def corpus_pairs(
    path: Path, fmt: str = "auto", how: Reading = DEFAULT_READING, report: ReadReport | None = None
) -> Iterator[Pair]:
    """The pairs of one corpus in any supported format, read one line at a time. The arguments are checked now,
    the file as it is read."""
    path, report = Path(path), report if report is not None else ReadReport()
    src_lang, tgt_lang, columns = how.src_lang, how.tgt_lang, how.columns
    if fmt not in FORMATS:
        raise CorpusError(f"{path}: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if src_lang == tgt_lang:
        raise CorpusError(f"{path}: source and target language are both {src_lang!r}")
    fmt = detect_format(path, src_lang, tgt_lang) if fmt == "auto" else fmt
    if columns is not None and fmt not in ("tsv", "anki"):
        raise CorpusError(f"{path}: columns={columns} applies to tsv and anki files, not {fmt} (which names its own)")
    report.formats[str(path)] = fmt
    if fmt == "csv":
        return readers.csv_pairs(path, how, report)
    if fmt == "moses":
        return readers.moses_pairs(path, how, report)
    if fmt == "tmx":
        return tmx_pairs(path, how, report)
    if fmt == "anki":
        if columns is None and "en" not in (src_lang, tgt_lang):
            raise CorpusError(f"{path}: Anki files are English first; pass columns=(...) for {src_lang}/{tgt_lang}")
        other = tgt_lang if src_lang == "en" else src_lang
        return readers.anki_pairs(path, columns or ("en", other), how, report)
    src_column, tgt_column = readers.column_indices(path, columns or (src_lang, tgt_lang), src_lang, tgt_lang)
    n_columns = len(columns) if columns else 2
    return readers.tsv_pairs(path, src_column, tgt_column, n_columns, report, how.skip_bad)


def read_corpus(
    path: Path, fmt: str = "auto", how: Reading = DEFAULT_READING, report: ReadReport | None = None
) -> list[Pair]:
    """Every pair of one corpus in any supported format (see ``corpus_pairs``)."""
    return list(corpus_pairs(path, fmt, how, report))


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


def clean(pairs: list[Pair], config: CleanConfig, report: ReadReport) -> list[Pair]:
    """NFC + whitespace cleanup, exact-duplicate removal, length and ratio filters; counts every drop."""
    seen = set()
    kept = []
    for index, pair in enumerate(pairs):
        pair = Pair(normalise(pair.src), normalise(pair.tgt), pair.origin)
        n_src, n_tgt = len(pair.src.split()), len(pair.tgt.split())
        where = pair.origin or f"pair {index + 1}"
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


def sentence_pairs(pairs: list[Pair], config: CleanConfig, avoid: list[Pair], report: ReadReport) -> list[Pair]:
    """One pair per sentence of each pair whose two sides hold the same number (≥ 2) of sentences, in order:
    "¡Hola! ¿Qué tal?" / "Hi! How are you?" also gives "¡Hola!" / "Hi!" and "¿Qué tal?" / "How are you?" (Tatoeba's
    greetings often come only inside such pairs). Each goes through ``clean``'s filters; one whose source or target is
    a sentence of ``avoid`` (dev and test, by ``match_key``) is dropped; every drop counted as "sentence pair: …"."""
    candidates = []
    for index, pair in enumerate(pairs):
        src, tgt = sentences(pair.src), sentences(pair.tgt)
        if len(src) == len(tgt) > 1:
            where = pair.origin or f"pair {index + 1}"
            candidates += [
                Pair(s, t, f"{where} (sentence {k})") for k, (s, t) in enumerate(zip(src, tgt, strict=True), 1)
            ]
    filtered = ReadReport()
    kept = clean(candidates, config, filtered)
    avoided_src = {match_key(p.src) for p in avoid}
    avoided_tgt = {match_key(p.tgt) for p in avoid}
    unseen = []
    for pair in kept:
        if match_key(pair.src) in avoided_src or match_key(pair.tgt) in avoided_tgt:
            filtered.skip("in the dev or test split", pair.origin)
        else:
            unseen.append(pair)
    for reason, count in filtered.skipped.items():
        report.skipped[f"sentence pair: {reason}"] += count
        report.examples.setdefault(f"sentence pair: {reason}", filtered.examples[reason])
    report.added["sentence pairs (data.split_sentences)"] += len(unseen)
    return unseen


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


def swapped(parts: Split) -> Split:
    """Every pair the other way round (``data.reverse``): the same split, the target sentences now the source."""
    return Split(*([Pair(p.tgt, p.src, p.origin) for p in part] for part in (parts.train, parts.dev, parts.test)))


def write_pairs(pairs: list[Pair], path: Path) -> None:
    """Write ``src<TAB>tgt`` lines (the project's own TSV layout), renamed in whole; the pairs must be cleaned."""
    for index, pair in enumerate(pairs):
        if any(c in text for text in (pair.src, pair.tgt) for c in "\t\r\n"):
            raise CorpusError(
                f"{pair.origin or f'pair {index + 1}'}: a tab or newline inside a sentence; clean() first"
            )
    write_beside(Path(path), lambda f: f.write(pair_lines(pairs).encode("utf-8")))


def pair_lines(pairs: list[Pair]) -> str:
    """The project's own TSV layout of cleaned pairs: one ``src<TAB>tgt`` line each."""
    return "".join(f"{p.src}\t{p.tgt}\n" for p in pairs)


MAX_PAIRS_FILE_BYTES = 1 << 30  # a run's training split is ~10 MB; a distilled file of a large corpus, some hundred MB


def read_pairs_file(path: Path) -> list[Pair]:
    """A file ``write_pairs`` wrote (a run's splits, a distilled file), one ``src<TAB>tgt`` line per pair."""
    pairs = []
    for number, line in enumerate(read_text(Path(path), MAX_PAIRS_FILE_BYTES, CorpusError).splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(f"{path}:{number}: expected 2 tab-separated fields, got {len(fields)}")
        if (longest := max(map(len, fields))) > readers.MAX_SEGMENT:
            raise CorpusError(
                f"{path}:{number}: a field of {longest:,} characters; a segment is at most {readers.MAX_SEGMENT:,}"
            )
        pairs.append(Pair(*fields))
    return pairs
