"""TMX 1.4 translation memories: ``<tu>`` units of ``<tuv xml:lang="..."><seg>text</seg></tuv>``, read as pairs.

Read with expat, one block of the file at a time, and safely. A document type naming its DTD by a SYSTEM or PUBLIC
identifier (as OmegaT and Trados write it) is read, its DTD never fetched; an internal subset, an entity declaration
or a reference to an entity that is not XML's own is refused (no XXE, no "billion laughs"). Memory stays bounded by
a few segments: the attributes per element, the nesting depth, one segment's length and the bytes of one tag or
comment are capped (time stays linear), and only the two languages' segments are kept. The two languages are picked
by ``xml:lang`` (its primary subtag: "es-ES" is "es"); inline codes (``<bpt>``, ``<ept>``, ``<ph>``, ``<it>``,
``<ut>``) are markup of the source format, not text, and are left out. Errors name the file, the ``<tu>`` (1-based)
and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.parsers import expat

from data.readers import DEFAULT_READING, MAX_SEGMENT, CorpusError, Pair, Reading, ReadReport, bad_record, checked_pair
from model.bounded_read import regular_size

BLOCK = 1 << 16  # bytes fed to the parser at a time
CODES = {"bpt", "ept", "ph", "it", "ut"}  # inline codes: their content is the original format's markup
MAX_ATTRIBUTES = 64  # per element; a TMX <tu> has at most about 15
MAX_DEPTH = 64  # open elements; tmx > body > tu > tuv > seg > codes nest about 8 deep
MAX_TUVS = 256  # <tuv> per <tu>: one per language
MAX_RUN = 4 * MAX_SEGMENT + BLOCK  # bytes without a "<": bounds one tag (no "<" inside), which expat holds whole


def language(code: str) -> str:
    """The primary subtag of a language tag, lowercased: "es-ES" and "ES_es" are "es"."""
    return code.replace("_", "-").split("-")[0].strip().lower()


class _Units:
    """expat handlers gathering each ``<tu>``'s segments of the wanted languages."""

    def __init__(self, path: Path, parser: expat.XMLParserType, wanted: tuple[str, str]) -> None:
        self.path, self.parser, self.wanted = path, parser, wanted
        self.done: list[tuple[int, int, dict[str, str]]] = []  # (index, line, {language: segment or ""})
        self.index = 0
        self.unit: dict[str, str] | None = None  # other languages map to "": named in messages, never kept
        self.lang: str | None = None
        self.seg: list[str] | None = None
        self.seg_chars = 0
        self.codes = 0  # depth inside inline codes
        self.depth = 0
        self.tuvs = 0
        self.line = 0
        self.encoding: str | None = None  # as the XML declaration names it

    def where(self, next_tu: bool = False) -> str:
        """The unit being read (or, with ``next_tu``, the one about to start), for messages."""
        if self.unit is not None:
            return f"<tu> {self.index} (line {self.line})"
        return f"<tu> {self.index + 1}" if next_tu else f"after <tu> {self.index}"

    def fail(self, message: str) -> None:
        raise CorpusError(f"{self.path}:{self.parser.CurrentLineNumber}: {self.where()}: {message}")

    def declaration(self, _version: str | None, encoding: str | None, _standalone: int) -> None:
        self.encoding = encoding

    def doctype(self, _name: str, _system_id: str | None, _public_id: str | None, internal_subset: int) -> None:
        if internal_subset:
            self.refuse()

    def refuse(self, *_: object) -> None:
        raise CorpusError(
            f"{self.path}:{self.parser.CurrentLineNumber}: a document type or entity declaration inside the file, or "
            "a reference to an entity; TMX files are read without them (they could read other files or expand "
            "without bound); a DTD named by SYSTEM or PUBLIC alone is fine, and never read"
        )

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if name == "tu":
            self.index += 1
            self.unit, self.line, self.tuvs = {}, self.parser.CurrentLineNumber, 0
        elif name == "tuv" and self.unit is not None:
            self.tuvs += 1
            if self.tuvs > MAX_TUVS:
                self.fail(f"over {MAX_TUVS} <tuv>; expected one per language")
            self.lang = language(attrs.get("xml:lang") or attrs.get("lang") or "")
        elif name == "seg" and self.lang and self.unit is not None:
            self.seg, self.seg_chars = ([] if self.lang in self.wanted else None), 0
            self.unit.setdefault(self.lang, "")
        elif name in CODES and self.seg is not None:
            self.codes += 1
        if len(attrs) > MAX_ATTRIBUTES:
            self.fail(f"<{name}> has {len(attrs)} attributes; at most {MAX_ATTRIBUTES} are read")
        if self.depth > MAX_DEPTH:
            self.fail(f"elements nested over {MAX_DEPTH} deep (at <{name}>); TMX nests about 8 deep")

    def end(self, name: str) -> None:
        self.depth -= 1
        if name in CODES and self.seg is not None:
            self.codes -= 1
        elif name == "seg" and self.seg is not None and self.unit is not None and self.lang:
            if not self.unit[self.lang]:  # the first <seg> of a language counts
                self.unit[self.lang] = "".join(self.seg)
            self.seg = None
        elif name == "tuv":
            self.lang = None
        elif name == "tu" and self.unit is not None:
            self.done.append((self.index, self.line, self.unit))
            self.unit = None

    def text(self, data: str) -> None:
        if self.seg is not None and not self.codes:
            self.seg_chars += len(data)
            if self.seg_chars > MAX_SEGMENT:
                self.fail(f"a <seg> of over {MAX_SEGMENT:,} characters; a segment is a sentence or a paragraph")
            self.seg.append(data)


def _parser(path: Path, wanted: tuple[str, str]) -> tuple[expat.XMLParserType, _Units]:
    parser = expat.ParserCreate()
    units = _Units(path, parser, wanted)
    parser.XmlDeclHandler = units.declaration
    parser.StartDoctypeDeclHandler = units.doctype
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)  # the DTD is never read
    parser.EntityDeclHandler = units.refuse
    parser.ExternalEntityRefHandler = units.refuse
    parser.SkippedEntityHandler = units.refuse  # &name; that only an unread DTD could define
    parser.StartElementHandler, parser.EndElementHandler = units.start, units.end
    parser.CharacterDataHandler = units.text
    parser.buffer_text = True
    return parser, units


class _Run:
    """Bytes since the last "<" in the file: expat holds a tag whole until its ">", and a tag has no "<" inside; and
    the unfinished token expat holds (a comment, a processing instruction: "<" may occur inside), which it rescans
    from its start at every block: both capped, memory stays bounded and time linear in the file."""

    def __init__(self) -> None:
        self.size, self.line, self.lines, self.tu = 0, 1, 0, False  # tu: the run began a <tu> start tag
        self.fed = 0  # bytes given to the parser

    def feed(self, block: bytes, units: _Units) -> None:
        if self.fed - units.parser.CurrentByteIndex > MAX_RUN:  # where expat's unfinished token starts
            raise CorpusError(
                f"{units.path}:{units.parser.CurrentLineNumber}: {units.where()}: over {MAX_RUN:,} bytes in one "
                'comment, processing instruction or tag (a "<" may occur inside); a TMX file has short ones'
            )
        self.fed += len(block)
        at = block.rfind(b"<")
        if at < 0:
            self.size += len(block)
        else:
            self.size, self.line = len(block) - at, self.lines + block.count(b"\n", 0, at) + 1
            self.tu = block[at : at + 4] in (b"<tu ", b"<tu\n", b"<tu\t", b"<tu\r") or block[at:] == b"<tu"
        self.lines += block.count(b"\n")
        if self.size > MAX_RUN:
            raise CorpusError(
                f"{units.path}:{self.line}: {units.where(next_tu=self.tu)}: over {MAX_RUN:,} bytes in one tag or "
                f"text; a TMX tag has a few attributes (at most {MAX_ATTRIBUTES} are read) and a <seg> at most "
                f"{MAX_SEGMENT:,} characters"
            )


def _parse_error(path: Path, err: expat.ExpatError | LookupError, encoding: str | None) -> CorpusError:
    """One line for XML that expat cannot read, naming the declared encoding where it may be the cause."""
    if isinstance(err, LookupError) or err.code == expat.errors.codes[expat.errors.XML_ERROR_UNKNOWN_ENCODING]:
        return CorpusError(
            f'{path}: the XML declaration names encoding="{encoding}", which cannot be read; '
            "save the file as UTF-8 (or name its real encoding)"
        )
    said = f' (the XML declaration says encoding="{encoding}": is the file saved in it?)' if encoding else ""
    return CorpusError(
        f"{path}:{err.lineno}: not well-formed XML ({expat.ErrorString(err.code)}){said}; expected a TMX file"
    )


def tmx_pairs(path: Path, how: Reading = DEFAULT_READING, report: ReadReport | None = None) -> Iterator[Pair]:
    """One pair per ``<tu>`` holding both languages; a unit without one of them is an error (or skipped, counted)."""
    src_lang, tgt_lang, skip_bad = how.src_lang, how.tgt_lang, how.skip_bad
    path, report = Path(path), report if report is not None else ReadReport()
    parser, units = _parser(path, (src_lang, tgt_lang))
    seen, run = {src_lang: 0, tgt_lang: 0}, _Run()
    regular_size(path, CorpusError)
    try:
        with open(path, "rb") as f:
            while block := f.read(BLOCK):
                run.feed(block, units)
                parser.Parse(block, False)
                yield from _drain(path, units, src_lang, tgt_lang, report, skip_bad, seen)
            parser.Parse(b"", True)
    except (expat.ExpatError, LookupError) as err:
        raise _parse_error(path, err, units.encoding) from None
    yield from _drain(path, units, src_lang, tgt_lang, report, skip_bad, seen)
    if units.index == 0:
        raise CorpusError(f"{path}: no <tu> translation units; expected a TMX file (<tmx><body><tu>…)")
    missing = [lang for lang, count in seen.items() if count == 0]
    if missing:
        raise CorpusError(
            f'{path}: no <tuv xml:lang="{missing[0]}"> in any of its {units.index} <tu>; the file\'s languages do '
            "not include it"
        )


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
