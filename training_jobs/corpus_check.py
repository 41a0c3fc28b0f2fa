"""Validate a corpus before training: read and clean it as training will, and report what was kept and why not."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data.corpus import CleanConfig, CorpusError, Pair, ReadReport, clean, detect_format, read_corpus, write_pairs
from data.readers import BOM, LANGUAGE_NAMES, moses_paths

SRC_LANG, TGT_LANG = "es", "en"
MIN_PAIRS = 20  # below this, the dev and test splits would be a pair or two
MAX_UNREADABLE = 0.5  # more lines than this failing to read means the format or the columns are wrong
SAMPLE_SIZE = 8
CORPUS_FILE = "corpus.tsv"  # the checked pairs, as a run trains on them
CHECK_FILE = "corpus_check.json"


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


def clean_config_of(preset: dict[str, Any]) -> CleanConfig:
    """The cleaning filters a preset's ``[data]`` table asks for (defaults where it says nothing)."""
    data, default = preset.get("data", {}), CleanConfig()
    return CleanConfig(
        int(data.get("min_tokens", default.min_tokens)),
        int(data.get("max_tokens", default.max_tokens)),
        float(data.get("max_ratio", default.max_ratio)),
    )


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


def read_clean(source: CorpusSource, config: CleanConfig, report: ReadReport) -> tuple[list[Pair], int]:
    """Pairs kept after reading (bad lines skipped and counted) and cleaning; also the count of unreadable lines."""
    pairs = read_corpus(source.path, source.fmt, SRC_LANG, TGT_LANG, report, skip_bad=True, columns=source.columns)
    unreadable = sum(report.skipped.values())
    return clean(pairs, config, report), unreadable


def _reasons(counts: dict[str, int], report: ReadReport, source: CorpusSource) -> tuple[Reason, ...]:
    return tuple(
        Reason(r, n, tuple(source.display(e) for e in report.examples.get(r, ())))
        for r, n in sorted(counts.items(), key=lambda item: -item[1])
    )


def length_stats(pairs: list[Pair]) -> tuple[LengthStats, ...]:
    """Whitespace tokens per sentence on each side."""
    stats = []
    for side in ("src", "tgt"):
        lengths = sorted(len(getattr(p, side).split()) for p in pairs)
        if lengths:
            p95 = lengths[min(len(lengths) - 1, int(0.95 * len(lengths)))]
            stats.append(
                LengthStats(
                    {"src": f"source ({SRC_LANG})", "tgt": f"target ({TGT_LANG})"}[side],
                    lengths[0],
                    statistics.median(lengths),
                    round(statistics.fmean(lengths), 1),
                    p95,
                    lengths[-1],
                )
            )
    return tuple(stats)


def check_corpus(source: CorpusSource, config: CleanConfig, max_bytes: int | None = None) -> CorpusCheck:
    """Read and clean ``source`` as training would; ``problems`` say why it cannot be trained on."""
    for path in source_files(source):
        if max_bytes is not None and path.is_file() and path.stat().st_size > max_bytes:
            size = path.stat().st_size / 1024 / 1024
            limit = f"{max_bytes / 1024 / 1024:.0f} MB"
            return CorpusCheck((f"{source.display(str(path))} is {size:.1f} MB, over the {limit} limit",), None)
    report = ReadReport()
    try:
        kept, unreadable = read_clean(source, config, report)
    except (CorpusError, OSError) as err:
        return CorpusCheck((source.display(str(err)),), detected_format(source.path))
    return summarise(source, report, kept, unreadable)


def summarise(source: CorpusSource, report: ReadReport, kept: list[Pair], unreadable: int) -> CorpusCheck:
    """The report the page shows, and the problems that block training."""
    problems = []
    if report.read and unreadable > MAX_UNREADABLE * report.read:
        worst = ", ".join(f"{r}: {n}" for r, n in report.skipped.most_common(2))
        problems.append(
            f"{unreadable} of {report.read} lines could not be read ({worst}); "
            "check the format and the source/target columns"
        )
    if len(kept) < MIN_PAIRS:
        problems.append(f"only {len(kept)} usable pairs after cleaning; training needs at least {MIN_PAIRS}")
    step = max(1, len(kept) // SAMPLE_SIZE)
    return CorpusCheck(
        problems=tuple(problems),
        fmt=next(iter(report.formats.values()), None),
        read=report.read,
        kept=len(kept),
        skipped=_reasons(dict(report.skipped), report, source),
        repaired=_reasons(dict(report.repaired), report, source),
        lengths=length_stats(kept),
        sample=tuple((p.src, p.tgt) for p in kept[::step][:SAMPLE_SIZE]),
    )


def write_corpus(source: CorpusSource, config: CleanConfig, run_dir: Path) -> Path:
    """Write the kept pairs as ``corpus.tsv`` (what the run trains on) and the check beside it; returns the TSV."""
    report = ReadReport()
    kept, unreadable = read_clean(source, config, report)
    check = summarise(source, report, kept, unreadable)
    if not check.ok:
        raise CorpusError("; ".join(check.problems))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_pairs(kept, run_dir / CORPUS_FILE)
    record = {"source": source.display(str(source.path)), **dataclasses.asdict(check)}
    (run_dir / CHECK_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n")
    return run_dir / CORPUS_FILE


# ----------------------------------------------------------------------------------------- choosing columns


def peek_rows(path: Path, n: int = 20) -> list[list[str]]:
    """The first ``n`` non-blank lines split on tabs (for choosing columns); undecodable bytes replaced."""
    with open(path, "rb") as f:
        head = f.read(256 * 1024).removeprefix(BOM).decode("utf-8", errors="replace")
    return [line.rstrip("\r").split("\t") for line in head.splitlines() if line.strip()][:n]


def tsv_columns(n_columns: int, src: int, tgt: int) -> tuple[str, ...]:
    """Language names for ``n_columns`` tab-separated columns with the source at ``src`` and the target at ``tgt``."""
    if src == tgt or not (0 <= src < n_columns and 0 <= tgt < n_columns):
        raise CorpusError(f"choose two different columns out of {n_columns}")
    return tuple(SRC_LANG if i == src else TGT_LANG if i == tgt else f"column{i + 1}" for i in range(n_columns))


def csv_header(path: Path) -> list[str]:
    """The column names in a CSV file's first line (empty when unreadable)."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        try:
            return next(csv.reader(f))
        except (csv.Error, StopIteration):
            return []


def csv_default_columns(header: list[str]) -> tuple[int, int]:
    """The source and target columns a header names (``es``/``spanish``/``source``...), else the first two."""
    names = dict(LANGUAGE_NAMES)

    def find(lang: str, role: tuple[str, ...]) -> int | None:
        wanted = {lang, *names.get(lang, ()), *role}
        return next((i for i, name in enumerate(header) if name.strip().lower() in wanted), None)

    src, tgt = find(SRC_LANG, ("source", "src")), find(TGT_LANG, ("target", "tgt"))
    if src is None or tgt is None or src == tgt:
        return 0, min(1, max(0, len(header) - 1))
    return src, tgt


def relabel_csv(path: Path, src: int, tgt: int, out_dir: Path) -> Path:
    """A copy of a CSV file whose header names column ``src`` "source" and ``tgt`` "target" (other lines as they are)."""
    header = csv_header(path)
    if src == tgt or not (0 <= src < len(header) and 0 <= tgt < len(header)):
        raise CorpusError(f"choose two different columns out of the header {header}")
    names = ["source" if i == src else "target" if i == tgt else f"column{i + 1}" for i in range(len(header))]
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{path.stem}.columns-{src + 1}-{tgt + 1}.csv"
    if out.is_file() and out.stat().st_mtime >= path.stat().st_mtime:
        return out
    with open(path, "rb") as original, open(out, "wb") as copy:
        first = original.readline()
        copy.write((",".join(names) + ("\r\n" if first.endswith(b"\r\n") else "\n")).encode())
        shutil.copyfileobj(original, copy)
    return out
