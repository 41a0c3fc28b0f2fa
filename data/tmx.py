"""TMX 1.4 translation memories: ``<tu>`` units of ``<tuv xml:lang="..."><seg>text</seg></tuv>``, read as pairs.

Read with expat, one block of the file at a time (memory bounded by one unit), and safely: a document type
declaration, an entity declaration or a reference to an external entity is refused before anything else is read
(no XXE, no "billion laughs"). The two languages are picked by ``xml:lang`` (its primary subtag: "es-ES" is "es");
inline codes (``<bpt>``, ``<ept>``, ``<ph>``, ``<it>``, ``<ut>``) are markup of the source format, not text, and
are left out. Errors name the file, the ``<tu>`` (1-based) and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.parsers import expat

from data.readers import DEFAULT_READING, CorpusError, Pair, Reading, ReadReport, bad_record, checked_pair

BLOCK = 1 << 16  # bytes fed to the parser at a time
CODES = {"bpt", "ept", "ph", "it", "ut"}  # inline codes: their content is the original format's markup


def language(code: str) -> str:
    """The primary subtag of a language tag, lowercased: "es-ES" and "ES_es" are "es"."""
    return code.replace("_", "-").split("-")[0].strip().lower()


class _Units:
    """expat handlers gathering each ``<tu>``'s segments by language."""

    def __init__(self, path: Path, parser: expat.XMLParserType) -> None:
        self.path, self.parser = path, parser
        self.done: list[tuple[int, int, dict[str, str]]] = []  # (index, line, {language: segment})
        self.index = 0
        self.unit: dict[str, str] | None = None
        self.lang: str | None = None
        self.seg: list[str] | None = None
        self.codes = 0  # depth inside inline codes
        self.line = 0

    def refuse(self, *_: object) -> None:
        raise CorpusError(
            f"{self.path}:{self.parser.CurrentLineNumber}: a document type or entity declaration; TMX files are "
            "read without them (they could read other files or expand without bound)"
        )

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "tu":
            self.index += 1
            self.unit, self.line = {}, self.parser.CurrentLineNumber
        elif name == "tuv" and self.unit is not None:
            self.lang = language(attrs.get("xml:lang") or attrs.get("lang") or "")
        elif name == "seg" and self.lang is not None:
            self.seg = []
        elif name in CODES and self.seg is not None:
            self.codes += 1

    def end(self, name: str) -> None:
        if name in CODES and self.seg is not None:
            self.codes -= 1
        elif name == "seg" and self.seg is not None and self.unit is not None and self.lang:
            self.unit.setdefault(self.lang, "".join(self.seg))
            self.seg = None
        elif name == "tuv":
            self.lang = None
        elif name == "tu" and self.unit is not None:
            self.done.append((self.index, self.line, self.unit))
            self.unit = None

    def text(self, data: str) -> None:
        if self.seg is not None and not self.codes:
            self.seg.append(data)


def _parser(path: Path) -> tuple[expat.XMLParserType, _Units]:
    parser = expat.ParserCreate()
    units = _Units(path, parser)
    parser.StartDoctypeDeclHandler = units.refuse
    parser.EntityDeclHandler = units.refuse
    parser.ExternalEntityRefHandler = units.refuse
    parser.StartElementHandler, parser.EndElementHandler = units.start, units.end
    parser.CharacterDataHandler = units.text
    parser.buffer_text = True
    return parser, units


def tmx_pairs(path: Path, how: Reading = DEFAULT_READING, report: ReadReport | None = None) -> Iterator[Pair]:
    """One pair per ``<tu>`` holding both languages; a unit without one of them is an error (or skipped, counted)."""
    src_lang, tgt_lang, skip_bad = how.src_lang, how.tgt_lang, how.skip_bad
    path, report = Path(path), report if report is not None else ReadReport()
    parser, units = _parser(path)
    seen = {src_lang: 0, tgt_lang: 0}
    try:
        with open(path, "rb") as f:
            while block := f.read(BLOCK):
                parser.Parse(block, False)
                yield from _drain(path, units, src_lang, tgt_lang, report, skip_bad, seen)
            parser.Parse(b"", True)
    except expat.ExpatError as err:
        raise CorpusError(f"{path}:{err.lineno}: not well-formed XML ({expat.ErrorString(err.code)}); expected a TMX "
                          "file") from None  # fmt: skip
    except FileNotFoundError:
        raise CorpusError(f"{path}: file not found") from None
    yield from _drain(path, units, src_lang, tgt_lang, report, skip_bad, seen)
    if units.index == 0:
        raise CorpusError(f"{path}: no <tu> translation units; expected a TMX file (<tmx><body><tu>…)")
    missing = [lang for lang, count in seen.items() if count == 0]
    if missing:
        raise CorpusError(f"{path}: no <tuv xml:lang=\"{missing[0]}\"> in any of its {units.index} <tu>; the file's "
                          "languages do not include it")  # fmt: skip


def _drain(
    path: Path, units: _Units, src_lang: str, tgt_lang: str, report: ReadReport, skip_bad: bool, seen: dict[str, int]
) -> Iterator[Pair]:
    for index, line, unit in units.done:
        report.read += 1
        where = f"{path}:<tu> {index} (line {line})"
        for lang in seen:
            seen[lang] += lang in unit
        lacking = [lang for lang in (src_lang, tgt_lang) if lang not in unit]
        if lacking:
            found = ", ".join(sorted(unit)) or "none"
            bad_record(
                report, skip_bad, "missing language", where, f'no <tuv xml:lang="{lacking[0]}"> (languages: {found})'
            )
            continue
        pair = checked_pair(unit[src_lang], unit[tgt_lang], where, report, skip_bad)
        if pair is not None:
            yield pair
    units.done.clear()
