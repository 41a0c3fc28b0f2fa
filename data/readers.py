"""Read parallel corpora (TSV, Anki, CSV, Moses) into pairs; every bad line is an error or a counted skip."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

LANGUAGE_NAMES = (  # header names a CSV column may carry for a language code
    ("es", ("es", "spa", "spanish", "español", "espanol", "castellano")),
    ("en", ("en", "eng", "english", "inglés", "ingles")),
)
BOM = b"\xef\xbb\xbf"


class CorpusError(ValueError):
    """Bad input that the user did not ask us to skip; the message names file, line and expectation."""


@dataclass(frozen=True)
class Pair:
    src: str
    tgt: str
    origin: str = field(default="", compare=False)  # "file:line", for the report; not part of equality


@dataclass
class ReadReport:
    """What reading and cleaning did: records read and kept, records skipped and lines repaired, by reason."""

    read: int = 0
    kept: int = 0
    skipped: Counter = field(default_factory=Counter)
    repaired: Counter = field(default_factory=Counter)  # kept after a fix (CRLF, BOM), only with skip_bad
    added: Counter = field(default_factory=Counter)  # training pairs made from kept ones (data.split_sentences)
    examples: dict[str, list[str]] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)  # corpus path -> format read

    def _example(self, reason: str, where: str, max_examples: int) -> None:
        shown = self.examples.setdefault(reason, [])
        if len(shown) < max_examples:
            shown.append(where)

    def skip(self, reason: str, where: str, max_examples: int = 3) -> None:
        self.skipped[reason] += 1
        self._example(reason, where, max_examples)

    def repair(self, reason: str, where: str, max_examples: int = 3) -> None:
        self.repaired[reason] += 1
        self._example(reason, where, max_examples)

    def as_dict(self) -> dict:
        return {
            "read": self.read,
            "kept": self.kept,
            "skipped": dict(self.skipped),
            "repaired": dict(self.repaired),
            **({"added": dict(self.added)} if self.added else {}),
            "examples": self.examples,
            "formats": self.formats,
        }


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line number in the file
    text: str | None  # None: not valid UTF-8
    bad_byte: int = -1  # where decoding failed, when text is None

    def check(self, where: str, report: ReadReport, skip_bad: bool) -> bool:
        """True for a decoded line; otherwise raise, or count the skip when skipping bad lines."""
        if self.text is None:
            message = f"invalid UTF-8 at byte {self.bad_byte} of the line; expected UTF-8 text"
            _bad(report, skip_bad, "invalid UTF-8", where, message)
        return self.text is not None


def _bad(report: ReadReport, skip_bad: bool, reason: str, where: str, message: str, repair: bool = False) -> None:
    """Raise CorpusError, or (skipping bad lines) count the record as skipped, or as repaired and kept."""
    if not skip_bad:
        raise CorpusError(f"{where}: {message}")
    (report.repair if repair else report.skip)(reason, where)


def raw_lines(path: Path) -> list[bytes]:
    """The undecoded lines of a file (without the final newline); errors for a missing or empty file."""
    path = Path(path)
    if path.is_dir():
        raise CorpusError(f"{path}: is a directory, expected a corpus file")
    if not path.is_file():
        raise CorpusError(f"{path}: file not found")
    raw = path.read_bytes()
    if not raw.removeprefix(BOM).strip():
        raise CorpusError(f"{path}: file is empty (expected one sentence pair per line)")
    lines = raw.split(b"\n")
    if lines[-1] == b"":  # the final newline
        lines.pop()
    return lines


def decode_lines(path: Path, raw: list[bytes], report: ReadReport, skip_bad: bool) -> list[Line]:
    """Decode UTF-8 line by line; a BOM or CRLF is an error, or (skipping) removed and counted as repaired."""
    lines = []
    for number, line in enumerate(raw, start=1):
        where = f"{path}:{number}"
        if number == 1 and line.startswith(BOM):
            message = "starts with a UTF-8 byte-order mark (BOM); expected UTF-8 without BOM"
            _bad(report, skip_bad, "byte-order mark", where, message, repair=True)
            line = line[len(BOM) :]
        if line.endswith(b"\r"):
            message = "Windows (CRLF) line ending; expected LF line endings (convert with dos2unix)"
            _bad(report, skip_bad, "CRLF line ending", where, message, repair=True)
            line = line[:-1]
        try:
            lines.append(Line(number, line.decode("utf-8")))
        except UnicodeDecodeError as err:
            lines.append(Line(number, None, err.start))  # reported by the reader, in line order
    return lines


def decoded_lines(path: Path, report: ReadReport, skip_bad: bool) -> list[Line]:
    """The decoded lines of one file (see ``raw_lines`` and ``decode_lines``)."""
    return decode_lines(Path(path), raw_lines(path), report, skip_bad)


def _pair(src: str, tgt: str, where: str, report: ReadReport, skip_bad: bool) -> Pair | None:
    """A pair of stripped sentences, or None (counted) when a side is empty."""
    src, tgt = src.strip(), tgt.strip()
    if not src or not tgt:
        side = "source" if not src else "target"
        _bad(report, skip_bad, "empty side", where, f"empty {side} sentence; expected text on both sides")
        return None
    return Pair(src, tgt, where)


def _read_fields(
    path: Path,
    src_column: int,
    tgt_column: int,
    counts: tuple[int, ...] | None,
    layout: str,
    report: ReadReport,
    skip_bad: bool,
) -> list[Pair]:
    """Pairs from tab-separated lines with one of ``counts`` fields (None: at least enough for both columns)."""
    pairs = []
    for line in decoded_lines(path, report, skip_bad):
        report.read += 1
        where = f"{path}:{line.number}"
        if not line.check(where, report, skip_bad):
            continue
        if not line.text.strip():
            _bad(report, skip_bad, "blank line", where, f"blank line; expected {layout}")
            continue
        fields = line.text.split("\t")
        enough = len(fields) in counts if counts else len(fields) > max(src_column, tgt_column)
        if not enough:
            wanted = " or ".join(map(str, counts)) if counts else f"at least {max(src_column, tgt_column) + 1}"
            message = f"expected {wanted} tab-separated fields ({layout}), found {len(fields)}"
            _bad(report, skip_bad, "wrong number of fields", where, message)
            continue
        pair = _pair(fields[src_column], fields[tgt_column], where, report, skip_bad)
        if pair is not None:
            pairs.append(pair)
    return pairs


def read_tsv(
    path: Path,
    src_column: int = 0,
    tgt_column: int = 1,
    n_columns: int | None = 2,
    report: ReadReport | None = None,
    skip_bad: bool = False,
) -> list[Pair]:
    """Pairs from a tab-separated file (``spanish<TAB>english`` by default; other column orders by index)."""
    report = report if report is not None else ReadReport()
    counts = (n_columns,) if n_columns else None
    layout = "source<TAB>target" if (src_column, tgt_column, n_columns) == (0, 1, 2) else "tab-separated columns"
    return _read_fields(Path(path), src_column, tgt_column, counts, layout, report, skip_bad)


def column_indices(path: Path, columns: tuple[str, ...], src_lang: str, tgt_lang: str) -> tuple[int, int]:
    """Positions of the source and target languages in ``columns``."""
    if columns.count(src_lang) != 1 or columns.count(tgt_lang) != 1:
        raise CorpusError(f"{path}: columns {columns} must name {src_lang!r} and {tgt_lang!r} exactly once each")
    return columns.index(src_lang), columns.index(tgt_lang)


def read_anki(
    path: Path,
    columns: tuple[str, ...] = ("en", "es"),
    src_lang: str = "es",
    tgt_lang: str = "en",
    report: ReadReport | None = None,
    skip_bad: bool = False,
) -> list[Pair]:
    """Pairs from a manythings.org/Anki file: ``english<TAB>spanish[<TAB>attribution]`` (languages by ``columns``)."""
    report = report if report is not None else ReadReport()
    src_column, tgt_column = column_indices(Path(path), columns, src_lang, tgt_lang)
    layout = "<TAB>".join(columns) + "[<TAB>attribution]"
    counts = (len(columns), len(columns) + 1)
    return _read_fields(Path(path), src_column, tgt_column, counts, layout, report, skip_bad)


def _header_column(header: list[str], lang: str, role: str) -> int | None:
    """The column whose header names ``lang`` (code or name) or the role (source/target), if exactly one does."""
    names = {lang, *dict(LANGUAGE_NAMES).get(lang, ()), role, {"source": "src", "target": "tgt"}[role]}
    found = [i for i, name in enumerate(header) if name.strip().lower() in names]
    return found[0] if len(found) == 1 else None


def read_csv(
    path: Path,
    src_lang: str = "es",
    tgt_lang: str = "en",
    report: ReadReport | None = None,
    skip_bad: bool = False,
) -> list[Pair]:
    """Pairs from a CSV file whose header names the columns (``es,en``, ``spanish,english`` or ``source,target``)."""
    path, report = Path(path), report if report is not None else ReadReport()
    lines = decoded_lines(path, report, skip_bad)
    for line in lines:
        if line.text is None:  # the csv module needs text: report the line now and read around it
            report.read += 1
            line.check(f"{path}:{line.number}", report, skip_bad)
    fed = [line for line in lines if line.text is not None]
    reader = csv.reader((f"{line.text}\n" for line in fed), strict=True)
    try:
        header = next(reader)
    except (csv.Error, StopIteration) as err:
        raise CorpusError(f"{path}:{fed[0].number if fed else 1}: unreadable CSV header ({err})") from None
    src_column, tgt_column = _header_column(header, src_lang, "source"), _header_column(header, tgt_lang, "target")
    if src_column is None or tgt_column is None or src_column == tgt_column:
        raise CorpusError(
            f"{path}:{fed[0].number}: the header must name the source and target columns once each "
            f"(e.g. '{src_lang},{tgt_lang}', 'spanish,english' or 'source,target'), found {header}"
        )
    pairs = []
    while True:
        where = f"{path}:{fed[min(reader.line_num, len(fed) - 1)].number}"  # first line of the record
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            report.read += 1
            message = f"malformed CSV ({err}); expected comma-separated fields with balanced double quotes"
            _bad(report, skip_bad, "malformed CSV", where, message)
            continue
        report.read += 1
        if not row:
            _bad(report, skip_bad, "blank line", where, f"blank line; expected {len(header)} fields as in the header")
        elif len(row) != len(header):
            message = f"expected {len(header)} comma-separated fields as in the header {header}, found {len(row)}"
            _bad(report, skip_bad, "wrong number of fields", where, message)
        elif (pair := _pair(row[src_column], row[tgt_column], where, report, skip_bad)) is not None:
            pairs.append(pair)
    return pairs


def moses_paths(path: Path, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """``corpus.es``/``corpus.en`` from either file or the common prefix ``corpus``."""
    path = Path(path)
    prefix = path.with_suffix("") if path.suffix in (f".{src_lang}", f".{tgt_lang}") else path
    return Path(f"{prefix}.{src_lang}"), Path(f"{prefix}.{tgt_lang}")


def read_moses(
    path: Path,
    src_lang: str = "es",
    tgt_lang: str = "en",
    report: ReadReport | None = None,
    skip_bad: bool = False,
) -> list[Pair]:
    """Pairs from two line-aligned files, ``PREFIX.<src_lang>`` and ``PREFIX.<tgt_lang>``."""
    report = report if report is not None else ReadReport()
    src_path, tgt_path = moses_paths(path, src_lang, tgt_lang)
    for side in (src_path, tgt_path):
        if not side.is_file():
            raise CorpusError(f"{side}: file not found (a Moses pair needs {src_path} and {tgt_path})")
    src_raw, tgt_raw = raw_lines(src_path), raw_lines(tgt_path)
    if len(src_raw) != len(tgt_raw):  # never skippable: every line after the gap would be misaligned
        raise CorpusError(
            f"{src_path} has {len(src_raw)} lines but {tgt_path} has {len(tgt_raw)}; "
            "expected line-aligned files with the same number of lines"
        )
    src_lines = decode_lines(src_path, src_raw, report, skip_bad)
    tgt_lines = decode_lines(tgt_path, tgt_raw, report, skip_bad)
    pairs = []
    for src, tgt in zip(src_lines, tgt_lines, strict=True):
        report.read += 1
        if not src.check(f"{src_path}:{src.number}", report, skip_bad):
            continue
        if not tgt.check(f"{tgt_path}:{tgt.number}", report, skip_bad):
            continue
        where = f"{src_path}:{src.number}"
        if not src.text.strip() and not tgt.text.strip():
            _bad(report, skip_bad, "blank line", where, f"blank line in both {src_path} and {tgt_path}")
        elif (pair := _pair(src.text, tgt.text, where, report, skip_bad)) is not None:
            pairs.append(pair)
    return pairs
