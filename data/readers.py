"""Read parallel corpora (TSV, Anki, CSV, Moses) into pairs, one line at a time; every bad line is an error or a
counted skip."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import AnyStr, NamedTuple

from data.languages import SRC_LANG, TGT_LANG, header_names
from model.bounded_read import regular_size

BOM = b"\xef\xbb\xbf"
UTF_BOMS = (  # longest first: the UTF-32-LE mark starts with the UTF-16-LE one
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
CODEC_NAMES = {
    codec: f"{codec[:6].upper()} ({'little' if codec[-2:] == 'le' else 'big'}-endian)" for _, codec in UTF_BOMS
}
MARKS = {codec: mark for mark, codec in UTF_BOMS}
HEAD_BYTES = 64 * 1024  # what format detection and the encoding checks look at
MAX_SEGMENT = 100_000  # characters of one sentence or segment: a translation memory holds sentences and paragraphs
MAX_LINE = 1 << 20  # bytes (or characters) of one line: a few segments; a longer line is never held whole


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

    def skip(self, reason: str, where: str, repaired: bool = False) -> None:
        """Count a record skipped (or ``repaired`` and kept) for ``reason``; the first three are shown by ``where``."""
        (self.repaired if repaired else self.skipped)[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < 3:
            shown.append(where)

    def as_dict(self) -> dict:
        """Every field, in order, counters as plain dicts; "added" only when pairs were added."""
        return {k: dict(v) if isinstance(v, Counter) else v for k, v in vars(self).items() if k != "added" or v}


@dataclass(frozen=True)
class Reading:
    """How to read one corpus: its language pair as read, the languages of tsv/anki columns (None: the format's
    default), and whether a bad record is skipped and counted or refused with an error."""

    src_lang: str = SRC_LANG
    tgt_lang: str = TGT_LANG
    skip_bad: bool = False
    columns: tuple[str, ...] | None = None


DEFAULT_READING = Reading()


class Line(NamedTuple):  # a tuple: made once per line read, so it must be cheap
    number: int  # 1-based line number in the file
    text: str | None  # None: not valid UTF-8, or over MAX_LINE
    bad_byte: int = -1  # where decoding failed, when text is None; -1: the line is over MAX_LINE

    def check(self, where: str, report: ReadReport, skip_bad: bool) -> bool:
        """True for a decoded line; otherwise raise, or count the skip when skipping bad lines."""
        if self.text is None and self.bad_byte < 0:
            message = f"a line of over {MAX_LINE:,} bytes; a line holds a sentence pair (a segment is at most {MAX_SEGMENT:,} characters)"
            bad_record(report, skip_bad, "line too long", where, message)
        elif self.text is None:
            message = f"invalid UTF-8 at byte {self.bad_byte} of the line; expected UTF-8 text"
            bad_record(report, skip_bad, "invalid UTF-8", where, message)
        return self.text is not None


def bad_record(report: ReadReport, skip_bad: bool, reason: str, where: str, message: str, repair: bool = False) -> None:
    """Raise CorpusError, or (skipping bad lines) count the record as skipped, or as repaired and kept."""
    if not skip_bad:
        raise CorpusError(f"{where}: {message}")
    report.skip(reason, where, repaired=repair)


def utf_bom(head: bytes) -> tuple[bytes, str] | None:
    """The UTF-16/32 byte-order mark ``head`` starts with and the codec it names; None for anything else."""
    return next(((mark, codec) for mark, codec in UTF_BOMS if head.startswith(mark)), None)


def text_codec(path: Path) -> str | None:
    """The codec a UTF-16/32 byte-order mark names; None for UTF-8. A file of NUL bytes without a mark (UTF-16 or
    UTF-32 saved without one), or anything but a regular file (a FIFO would block), is an error."""
    regular_size(path, CorpusError)
    with Path(path).open("rb") as file:
        head = file.read(HEAD_BYTES)
    if (found := utf_bom(head)) is not None:
        return found[1]
    nul = head.count(0)
    if len(head) >= 4 and nul >= len(head) // 4:  # UTF-16 puts a NUL beside every ASCII character, UTF-32 three
        utf16 = "UTF-16 (little-endian)" if head[1::2].count(0) > head[0::2].count(0) else "UTF-16 (big-endian)"
        guess = "UTF-32" if nul >= len(head) * 5 // 8 else utf16
        raise CorpusError(
            f"{path}: {nul} of the first {len(head)} bytes are NUL: this looks like {guess} text "
            "without a byte-order mark; expected UTF-8: save the file as UTF-8 (an editor's Save as, or iconv)"
        )
    return None


def head_text(path: Path, size: int = HEAD_BYTES) -> str:
    """The first ``size`` bytes as text (UTF-16/32 by their byte-order mark, else UTF-8), marks removed, undecodable
    bytes replaced: for detecting a format and showing columns. Only a regular file is read."""
    regular_size(path, CorpusError)
    with Path(path).open("rb") as file:
        head = file.read(size)
    mark, codec = utf_bom(head) or (BOM, "utf-8")
    return head.removeprefix(mark).decode(codec, errors="replace")


def _capped(readline: Callable[[int], AnyStr], newline: AnyStr) -> Iterator[AnyStr | None]:
    """Each line without its final newline; None for one over MAX_LINE, whose rest is skipped a block at a time."""
    while line := readline(MAX_LINE + 1):
        if len(line) <= MAX_LINE or line.endswith(newline):
            yield line.removesuffix(newline)
            continue
        while (rest := readline(MAX_LINE)) and not rest.endswith(newline):
            pass
        yield None


def _lines(path: Path, codec: str | None) -> Iterator[bytes | None]:
    """Each line as UTF-8 bytes without its final newline, read one at a time (converted from ``codec``); None for
    a line over MAX_LINE, never held whole."""
    if codec is None:
        with path.open("rb") as file:
            yield from _capped(file.readline, b"\n")
        return
    file = path.open("rb")
    file.seek(len(MARKS[codec]))
    with io.TextIOWrapper(file, encoding=codec, newline="\n") as text:
        number = 0  # lines read so far: a decoding error lies in the next one or soon after
        try:
            for line in _capped(text.readline, "\n"):
                number += 1
                yield None if line is None else line.encode("utf-8")
        except UnicodeDecodeError as err:
            name = CODEC_NAMES[codec]
            raise CorpusError(
                f"{path}:{number + 1}: invalid {name} ({err.reason}) at or soon after this line; "
                f"expected {name} throughout: save the file as UTF-8"
            ) from None


def _no_text(path: Path, codec: str | None) -> str | None:
    """What the file holds when it holds no text (nothing, or only whitespace and a byte-order mark); else None."""
    n, empty = 0, True
    for n, line in enumerate(_lines(path, codec), 1):
        if line is None or (line := line.removeprefix(BOM) if n == 1 else line).strip():
            return None
        empty = empty and not line
    return "file is empty" if empty else f"file is blank: its {n} lines hold only tabs or spaces"


def raw_lines(path: Path, report: ReadReport, skip_bad: bool) -> Iterator[bytes | None]:
    """The lines of a file as UTF-8 bytes, one at a time, without the final newline; errors for a missing, empty
    or NUL-filled file. UTF-16/32 with a byte-order mark is an error, or (skipping bad lines) converted and
    counted as repaired."""
    path = Path(path)
    if path.is_dir():
        raise CorpusError(f"{path}: is a directory, expected a corpus file")
    codec = text_codec(path)
    if codec is not None:
        name = CODEC_NAMES[codec]
        message = f"{name} text (byte-order mark {MARKS[codec].hex(' ').upper()}); expected UTF-8: save it as UTF-8"
        bad_record(report, skip_bad, f"{name} text, read and converted to UTF-8", f"{path}:1", message, repair=True)
    if (held := _no_text(path, codec)) is not None:
        raise CorpusError(f"{path}: {held}; expected one sentence pair per line")
    return _lines(path, codec)


def decode_lines(path: Path, raw: Iterable[bytes | None], report: ReadReport, skip_bad: bool) -> Iterator[Line]:
    """Decode UTF-8 line by line; a BOM or CRLF is an error, or (skipping) removed and counted as repaired."""
    for number, line in enumerate(raw, start=1):
        if line is None:  # over MAX_LINE
            yield Line(number, None)
            continue
        if number == 1 and line.startswith(BOM):
            message = "starts with a UTF-8 byte-order mark (BOM); expected UTF-8 without BOM"
            bad_record(report, skip_bad, "byte-order mark", f"{path}:{number}", message, repair=True)
            line = line[len(BOM) :]
        if line.endswith(b"\r"):
            message = "Windows (CRLF) line ending; expected LF line endings (convert with dos2unix)"
            bad_record(report, skip_bad, "CRLF line ending", f"{path}:{number}", message, repair=True)
            line = line[:-1]
        try:
            decoded = Line(number, line.decode("utf-8"))
        except UnicodeDecodeError as err:
            decoded = Line(number, None, err.start)  # reported by the reader, in line order
        yield decoded


def checked_pair(src: str, tgt: str, where: str, report: ReadReport, skip_bad: bool) -> Pair | None:
    """A pair of stripped sentences, or None (counted) when a side is empty."""
    src, tgt = src.strip(), tgt.strip()
    if not src or not tgt:
        side = "source" if not src else "target"
        bad_record(report, skip_bad, "empty side", where, f"empty {side} sentence; expected text on both sides")
        return None
    return Pair(src, tgt, where)


def _field_pairs(
    path: Path,
    src_column: int,
    tgt_column: int,
    counts: tuple[int, ...],
    layout: str,
    report: ReadReport,
    skip_bad: bool,
) -> Iterator[Pair]:
    """Pairs from tab-separated lines with one of ``counts`` fields."""
    name = str(path)
    for line in decode_lines(path, raw_lines(path, report, skip_bad), report, skip_bad):
        report.read += 1
        where = f"{name}:{line.number}"
        if not line.check(where, report, skip_bad):
            continue
        if not line.text.strip():
            bad_record(report, skip_bad, "blank line", where, f"blank line; expected {layout}")
            continue
        fields = line.text.split("\t")
        if len(fields) not in counts:
            message = f"expected {' or '.join(map(str, counts))} tab-separated fields ({layout}), found {len(fields)}"
            bad_record(report, skip_bad, "wrong number of fields", where, message)
            continue
        pair = checked_pair(fields[src_column], fields[tgt_column], where, report, skip_bad)
        if pair is not None:
            yield pair


def tsv_pairs(
    path: Path,
    src_column: int = 0,
    tgt_column: int = 1,
    n_columns: int = 2,
    report: ReadReport | None = None,
    skip_bad: bool = False,
) -> Iterator[Pair]:
    """Pairs from a tab-separated file (``spanish<TAB>english`` by default; other column orders by index)."""
    report = report if report is not None else ReadReport()
    layout = "source<TAB>target" if (src_column, tgt_column, n_columns) == (0, 1, 2) else "tab-separated columns"
    return _field_pairs(Path(path), src_column, tgt_column, (n_columns,), layout, report, skip_bad)


def read_tsv(path: Path) -> list[Pair]:
    """All pairs of a ``source<TAB>target`` file; any bad line is an error."""
    return list(tsv_pairs(path))


def column_indices(path: Path, columns: tuple[str, ...], src_lang: str, tgt_lang: str) -> tuple[int, int]:
    """Positions of the source and target languages in ``columns``."""
    if columns.count(src_lang) != 1 or columns.count(tgt_lang) != 1:
        raise CorpusError(f"{path}: columns {columns} must name {src_lang!r} and {tgt_lang!r} exactly once each")
    return columns.index(src_lang), columns.index(tgt_lang)


def anki_pairs(path: Path, columns: tuple[str, ...], how: Reading, report: ReadReport) -> Iterator[Pair]:
    """Pairs from a manythings.org/Anki file: ``english<TAB>spanish[<TAB>attribution]`` (languages by ``columns``)."""
    src_column, tgt_column = column_indices(Path(path), columns, how.src_lang, how.tgt_lang)
    layout = "<TAB>".join(columns) + "[<TAB>attribution]"
    counts = (len(columns), len(columns) + 1)
    return _field_pairs(Path(path), src_column, tgt_column, counts, layout, report, how.skip_bad)


def _header_column(header: list[str], lang: str, role: str) -> int | None:
    """The column whose header names ``lang`` (code or name) or the role (source/target), if exactly one does."""
    names = {*header_names(lang), role, {"source": "src", "target": "tgt"}[role]}
    found = [i for i, name in enumerate(header) if name.strip().lower() in names]
    return found[0] if len(found) == 1 else None


def _text_lines(path: Path, report: ReadReport, skip_bad: bool) -> Iterator[Line]:
    """The decoded lines; each undecodable one is reported here (the csv module needs text) and left out."""
    for line in decode_lines(path, raw_lines(path, report, skip_bad), report, skip_bad):
        if line.text is None:
            report.read += 1
            line.check(f"{path}:{line.number}", report, skip_bad)
        else:
            yield line


def csv_pairs(path: Path, how: Reading, report: ReadReport) -> Iterator[Pair]:
    """Pairs from a CSV file whose header names the columns (``es,en``, ``spanish,english`` or ``source,target``)."""
    src_lang, tgt_lang, skip_bad = how.src_lang, how.tgt_lang, how.skip_bad
    lines = _text_lines(path, report, skip_bad)
    upcoming = next(lines, None)  # the line the csv reader takes next: where its next record starts
    last = upcoming.number if upcoming else 1

    def feed() -> Iterator[str]:
        nonlocal upcoming, last
        while upcoming is not None:
            line, upcoming = upcoming, next(lines, None)
            last = line.number
            yield f"{line.text}\n"

    reader = csv.reader(feed(), strict=True)
    first = last
    try:
        header = next(reader)
    except (csv.Error, StopIteration) as err:
        raise CorpusError(f"{path}:{first}: unreadable CSV header ({err})") from None
    src_column, tgt_column = _header_column(header, src_lang, "source"), _header_column(header, tgt_lang, "target")
    if src_column is None or tgt_column is None or src_column == tgt_column:
        raise CorpusError(
            f"{path}:{first}: the header must name the source and target columns once each "
            f"(e.g. '{src_lang},{tgt_lang}', 'spanish,english' or 'source,target'), found {header}"
        )
    while True:
        where = f"{path}:{upcoming.number if upcoming else last}"  # first line of the record
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            report.read += 1
            message = f"malformed CSV ({err}); expected comma-separated fields with balanced double quotes"
            bad_record(report, skip_bad, "malformed CSV", where, message)
            continue
        report.read += 1
        if not row:
            bad_record(
                report, skip_bad, "blank line", where, f"blank line; expected {len(header)} fields as in the header"
            )
        elif len(row) != len(header):
            message = f"expected {len(header)} comma-separated fields as in the header {header}, found {len(row)}"
            bad_record(report, skip_bad, "wrong number of fields", where, message)
        elif (pair := checked_pair(row[src_column], row[tgt_column], where, report, skip_bad)) is not None:
            yield pair


def moses_paths(path: Path, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """``corpus.es``/``corpus.en`` from either file or the common prefix ``corpus``."""
    path = Path(path)
    prefix = path.with_suffix("") if path.suffix in (f".{src_lang}", f".{tgt_lang}") else path
    return Path(f"{prefix}.{src_lang}"), Path(f"{prefix}.{tgt_lang}")


def moses_pairs(path: Path, how: Reading, report: ReadReport) -> Iterator[Pair]:
    """Pairs from two line-aligned files, ``PREFIX.<src_lang>`` and ``PREFIX.<tgt_lang>``."""
    skip_bad = how.skip_bad
    src_path, tgt_path = moses_paths(path, how.src_lang, how.tgt_lang)
    for side in (src_path, tgt_path):
        if not side.is_file():
            raise CorpusError(f"{side}: file not found (a Moses pair needs {src_path} and {tgt_path})")
    src_raw, tgt_raw = raw_lines(src_path, report, skip_bad), raw_lines(tgt_path, report, skip_bad)
    n_src, n_tgt = (sum(1 for _ in _lines(p, text_codec(p))) for p in (src_path, tgt_path))
    if n_src != n_tgt:  # never skippable: every line after the gap would be misaligned
        raise CorpusError(
            f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}; "
            "expected line-aligned files with the same number of lines"
        )
    src_lines = decode_lines(src_path, src_raw, report, skip_bad)
    tgt_lines = decode_lines(tgt_path, tgt_raw, report, skip_bad)
    for src, tgt in zip(src_lines, tgt_lines, strict=True):
        report.read += 1
        if not src.check(f"{src_path}:{src.number}", report, skip_bad):
            continue
        if not tgt.check(f"{tgt_path}:{tgt.number}", report, skip_bad):
            continue
        where = f"{src_path}:{src.number}"
        if not src.text.strip() and not tgt.text.strip():
            bad_record(report, skip_bad, "blank line", where, f"blank line in both {src_path} and {tgt_path}")
        elif (pair := checked_pair(src.text, tgt.text, where, report, skip_bad)) is not None:
            yield pair
