"""TMX 1.4 translation memories: ``<tu>`` units of ``<tuv xml:lang="..."><seg>text</seg></tuv>``, read as pairs.

Read with lxml's pull parser, one block of the file at a time, and safely: a DTD named by SYSTEM or PUBLIC (as
OmegaT and Trados write it) is never fetched, one declaring entities or elements inside the file is refused, and
libxml2 caps any expansion (no XXE, no "billion laughs"). Memory stays bounded by one unit (the caps below), each
``<tu>`` dropped once read. The two languages are picked by ``xml:lang`` (its primary subtag: "es-ES" is "es");
inline codes (``<bpt>``, ``<ept>``, ``<ph>``, ``<it>``, ``<ut>``) are markup of the source format, not text, and are
left out. Errors name the file, the line and the ``<tu>`` (1-based).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from lxml import etree

from data.readers import DEFAULT_READING, MAX_SEGMENT, CorpusError, Pair, Reading, ReadReport, bad_record, checked_pair
from model.bounded_read import regular_size

BLOCK = 1 << 14  # bytes fed to the parser at a time: a block's events are held at once
CODES = {"bpt", "ept", "ph", "it", "ut"}  # inline codes: their content is the original format's markup
MAX_ATTRIBUTES = 64  # per element; a TMX <tu> has at most about 15
MAX_DEPTH = 64  # open elements; tmx > body > tu > tuv > seg > codes nest about 8 deep
MAX_ELEMENTS = 4096  # per <tu>: a <tuv> and a <seg> per language, a few inline codes
MAX_RUN = 4 * MAX_SEGMENT + BLOCK  # bytes fed with no tag completed: the parser holds an unfinished token whole
MAX_UNIT = 16 * MAX_SEGMENT  # bytes of one <tu>, held until it ends: two segments at their longest, and the others
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
DECLARED = re.compile(rb"<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']{1,80})")  # the XML declaration's encoding


def language(code: str) -> str:
    """The primary subtag of a language tag, lowercased: "es-ES" and "ES_es" are "es"."""
    return code.replace("_", "-").split("-")[0].strip().lower()


def _text(node: etree._Element) -> Iterator[str]:
    """The text inside ``node``, inline codes, comments and processing instructions left out (their tails kept)."""
    yield node.text or ""
    for child in node:
        if isinstance(child.tag, str) and child.tag not in CODES:  # a comment's tag is a function
            yield from _text(child)
        yield child.tail or ""


def _forget(node: etree._Element) -> None:
    """Drop what ``node`` holds and the siblings read before it: memory stays with the unit being read."""
    node.clear(keep_tail=True)
    parent = node.getparent()
    while parent is not None and node.getprevious() is not None:
        del parent[0]


class _Units:
    """The pull parser fed within the byte caps, its events gathered into each ``<tu>``'s wanted segments."""

    def __init__(self, path: Path, wanted: tuple[str, str]) -> None:
        self.path, self.wanted = path, wanted
        self.done: list[tuple[int, int, dict[str, str]]] = []  # (index, line, {language: segment or ""})
        self.index = 0
        self.unit: dict[str, str] | None = None  # other languages map to "": named in messages, never kept
        self.lang: str | None = None
        self.line = self.depth = self.elements = 0
        self.fed = self.lines = 0  # bytes and newlines given to the parser
        self.last_event = self.unit_start = 0  # bytes fed when a tag last completed, when the open <tu> began
        self.encoding: str | None = None  # as the XML declaration names it

    def where(self) -> str:
        """The unit being read, for messages."""
        return f"<tu> {self.index} (line {self.line})" if self.unit is not None else f"after <tu> {self.index}"

    def fail(self, line: int, message: str) -> None:
        raise CorpusError(f"{self.path}:{line}: {self.where()}: {message}")

    def feed(self, parser: etree.XMLPullParser, block: bytes) -> None:
        """Give ``block`` to the parser unless that passes a byte cap, then read the events it completes."""
        if not self.fed and (declared := DECLARED.match(block)):
            self.encoding = declared[1].decode("ascii", "replace")
        if self.fed + len(block) - self.last_event > MAX_RUN:
            self.fail(
                self.lines + 1,
                f"over {MAX_RUN:,} bytes with no tag completed: one tag, text, comment or processing instruction "
                f"that long; a TMX file has short ones (a <seg> at most {MAX_SEGMENT:,} characters)",
            )
        if self.unit is not None and self.fed + len(block) - self.unit_start > MAX_UNIT:
            self.fail(self.lines + 1, f"over {MAX_UNIT:,} bytes; a <tu> holds a sentence or a paragraph per language")
        self.fed, self.lines = self.fed + len(block), self.lines + block.count(b"\n")
        parser.feed(block)
        self.read(parser.read_events())

    def read(self, events: Iterable[tuple[str, etree._Element]]) -> None:
        for event, node in events:
            self.last_event = self.fed
            if event == "start":
                self.start(node, node.tag)
            elif event == "end":
                self.end(node, node.tag)
            elif self.unit is None:  # a comment or processing instruction between units
                _forget(node)
            else:
                self.count(node)

    def count(self, node: etree._Element) -> None:
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            self.fail(node.sourceline, f"over {MAX_ELEMENTS:,} elements; a <tu> has a <tuv> and a <seg> per language")

    def start(self, node: etree._Element, tag: str) -> None:
        self.depth += 1
        if tag == "tu":
            self.index += 1
            self.unit, self.line, self.elements, self.unit_start = {}, node.sourceline, 0, self.fed
        elif tag == "tuv" and self.unit is not None:
            self.lang = language(node.get(XML_LANG) or node.get("lang") or "")
        elif self.depth == 1:
            self.root(node)
        if self.unit is not None:
            self.count(node)
        if len(node.attrib) > MAX_ATTRIBUTES:
            self.fail(node.sourceline, f"<{tag}> has {len(node.attrib)} attributes; at most {MAX_ATTRIBUTES} are read")
        if self.depth > MAX_DEPTH:
            self.fail(node.sourceline, f"elements nested over {MAX_DEPTH} deep (at <{tag}>); TMX nests about 8 deep")

    def root(self, node: etree._Element) -> None:
        """Refuse a document type declaring entities or elements inside the file (read before the root element)."""
        dtd = node.getroottree().docinfo.internalDTD
        if dtd is not None and (any(dtd.iterentities()) or any(dtd.iterelements())):
            raise CorpusError(
                f"{self.path}:{node.sourceline}: a document type or entity declaration inside the file (before "
                f"<{node.tag}>); TMX files are read without them (they could read other files or expand without "
                "bound); a DTD named by SYSTEM or PUBLIC alone is fine, and never read"
            )

    def end(self, node: etree._Element, tag: str) -> None:
        self.depth -= 1
        if self.unit is None:  # the header, its properties: nothing kept
            _forget(node)
        elif tag == "seg" and self.lang and not self.unit.get(self.lang):  # the first <seg> of a language counts
            text = "".join(_text(node)) if self.lang in self.wanted else ""
            if len(text) > MAX_SEGMENT:
                self.fail(
                    node.sourceline,
                    f"a <seg> of over {MAX_SEGMENT:,} characters; a segment is a sentence or a paragraph",
                )
            self.unit[self.lang] = text
        elif tag == "tuv":
            self.lang = None
        elif tag == "tu":
            self.done.append((self.index, self.line, self.unit))
            self.unit = None
            _forget(node)


def _parse_error(path: Path, err: etree.XMLSyntaxError, encoding: str | None) -> CorpusError:
    """One line for XML that libxml2 cannot read, naming the declared encoding where it may be the cause."""
    message = " ".join(re.sub(r", line \d+, column \d+$", "", err.msg or "").split())  # one line, whatever libxml2 says
    if err.code == etree.ErrorTypes.ERR_UNSUPPORTED_ENCODING:
        return CorpusError(f"{path}:{err.lineno}: {message}; save the file as UTF-8 (or name its real encoding)")
    said = f' (the XML declaration says encoding="{encoding}": is the file saved in it?)' if encoding else ""
    return CorpusError(f"{path}:{err.lineno}: not well-formed XML ({message}){said}; expected a TMX file")


def tmx_pairs(path: Path, how: Reading = DEFAULT_READING, report: ReadReport | None = None) -> Iterator[Pair]:
    """One pair per ``<tu>`` holding both languages; a unit without one of them is an error (or skipped, counted)."""
    src_lang, tgt_lang, skip_bad = how.src_lang, how.tgt_lang, how.skip_bad
    path, report = Path(path), report if report is not None else ReadReport()
    units, seen = _Units(path, (src_lang, tgt_lang)), {src_lang: 0, tgt_lang: 0}
    # internal: entities the file declares (refused at its root) and XML's own; none fetched, expansion capped
    parser = etree.XMLPullParser(("start", "end", "comment", "pi"), resolve_entities="internal", no_network=True)

    def drain() -> Iterator[Pair]:
        """The pairs of the units read so far; a unit without one of the languages counted or refused."""
        for index, line, unit in units.done:
            report.read += 1
            where = f"{path}:<tu> {index} (line {line})"
            for lang in seen:
                seen[lang] += lang in unit
            lacking = [lang for lang in (src_lang, tgt_lang) if lang not in unit]
            if lacking:
                message = f'no <tuv xml:lang="{lacking[0]}"> (languages: {", ".join(sorted(unit)) or "none"})'
                bad_record(report, skip_bad, "missing language", where, message)
                continue
            pair = checked_pair(unit[src_lang], unit[tgt_lang], where, report, skip_bad)
            if pair is not None:
                yield pair
        units.done.clear()

    regular_size(path, CorpusError)
    try:
        with open(path, "rb") as f:
            while block := f.read(BLOCK):
                units.feed(parser, block)
                yield from drain()
            parser.close()
    except etree.XMLSyntaxError as err:
        units.read(parser.read_events())  # what was read before the error may break a cap: that names the <tu>
        raise _parse_error(path, err, units.encoding) from None
    units.read(parser.read_events())
    yield from drain()
    if units.index == 0:
        raise CorpusError(f"{path}: no <tu> translation units; expected a TMX file (<tmx><body><tu>…)")
    missing = [lang for lang, count in seen.items() if count == 0]
    if missing:
        raise CorpusError(
            f'{path}: no <tuv xml:lang="{missing[0]}"> in any of its {units.index} <tu>; the file\'s languages do '
            "not include it"
        )
