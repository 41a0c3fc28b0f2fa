"""Corpus readers (every format, every bad case), format detection, cleaning, and the leak-free split."""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import pytest

from data.corpus import (
    CleanConfig,
    CorpusError,
    Pair,
    ReadReport,
    clean,
    corpus_pairs,
    detect_format,
    match_key,
    read_corpus,
    read_pairs_file,
    split,
    write_pairs,
)
from data.readers import MAX_SEGMENT, Reading

FORMATS = ("tsv", "anki", "csv", "moses")
GOOD = [(b"uno", b"one"), (b"dos", b"two"), (b"tres", b"three")]
ATTRIBUTION = b"CC-BY 2.0 (France) Attribution: tatoeba.org #1 (ana) & #2 (bo)"


def write_corpus(
    directory: Path, fmt: str, rows: list[tuple[bytes, bytes]], bom: bool = False, crlf: bool = False
) -> tuple[Path, Path, int]:
    """Write ``rows`` (spanish, english) in ``fmt``; returns (path to read, file holding Spanish, header lines)."""
    header = b"es,en\n" if fmt == "csv" else b""
    if fmt == "moses":
        es, en = directory / "corpus.es", directory / "corpus.en"
        files = {es: [s for s, _ in rows], en: [t for _, t in rows]}
        path = directory / "corpus"
    else:
        layouts = {
            "tsv": lambda s, t: s + b"\t" + t,
            "anki": lambda s, t: t + b"\t" + s + b"\t" + ATTRIBUTION,
            "csv": lambda s, t: s + b"," + t,
        }
        es = path = directory / f"corpus.{'csv' if fmt == 'csv' else 'txt'}"
        files = {path: [layouts[fmt](s, t) for s, t in rows]}
    for file, lines in files.items():
        content = header + b"".join(line + b"\n" for line in lines)
        content = content.replace(b"\n", b"\r\n") if crlf else content
        file.write_bytes((b"\xef\xbb\xbf" if bom and file == es else b"") + content)
    return path, es, header.count(b"\n")


def at(file: Path, line: int) -> str:
    """A regex matching ``file:line`` literally."""
    return re.escape(f"{file}:{line}")


def read(path: Path, fmt: str = "auto", skip_bad: bool = False, **kwargs) -> tuple[list[Pair], ReadReport]:
    report = ReadReport()
    return read_corpus(path, fmt, Reading("es", "en", skip_bad, kwargs.get("columns")), report), report


def texts(pairs: list[Pair]) -> list[tuple[str, str]]:
    return [(p.src, p.tgt) for p in pairs]


def assert_counted(report: ReadReport, reason: str, where: str, kept: int, pairs: list[Pair]) -> None:
    """Skip mode: the bad record is counted under ``reason`` with an example; every record is accounted for."""
    assert report.skipped[reason] == 1
    assert where in report.examples[reason]
    assert len(pairs) == kept
    assert report.read == len(pairs) + sum(report.skipped.values())


# ----------------------------------------------------------------------------------------- good files


@pytest.mark.parametrize("fmt", FORMATS)
def test_good_file_read_in_each_format_and_detected(tmp_path: Path, fmt: str) -> None:
    path, _, _ = write_corpus(tmp_path, fmt, GOOD)
    assert detect_format(path) == fmt
    for given in ("auto", fmt):
        pairs, report = read(path, given)
        assert texts(pairs) == [("uno", "one"), ("dos", "two"), ("tres", "three")]
        assert report.read == 3 and not report.skipped and not report.repaired
        assert report.formats == {str(path): fmt}


def test_moses_pair_is_found_from_either_file_or_the_prefix(tmp_path: Path) -> None:
    write_corpus(tmp_path, "moses", GOOD)
    for name in ("corpus", "corpus.es", "corpus.en"):
        assert detect_format(tmp_path / name) == "moses"
        assert texts(read(tmp_path / name)[0])[0] == ("uno", "one")
    reversed_pairs = read_corpus(tmp_path / "corpus.en", "moses", Reading(src_lang="en", tgt_lang="es"))
    assert texts(reversed_pairs)[0] == ("one", "uno")


def test_tsv_is_source_first_unless_columns_say_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "english-first.txt"
    path.write_text("Hello.\tHola.\nThanks.\tGracias.\n", encoding="utf-8")
    assert detect_format(path) == "tsv"  # two columns, English-looking first: not guessed
    assert texts(read(path)[0])[0] == ("Hello.", "Hola.")
    assert texts(read(path, columns=("en", "es"))[0])[0] == ("Hola.", "Hello.")
    assert texts(read(path, "anki")[0])[0] == ("Hola.", "Hello.")  # Anki layout: English first, 2 or 3 columns


def test_anki_accepts_two_or_three_columns_and_explicit_column_languages(tmp_path: Path) -> None:
    path = tmp_path / "spa.txt"
    path.write_bytes(b"Go.\tVe.\t" + ATTRIBUTION + b"\nHi.\tHola.\n")
    assert texts(read(path, "anki")[0]) == [("Ve.", "Go."), ("Hola.", "Hi.")]
    assert texts(read(path, "anki", columns=("es", "en"))[0]) == [("Go.", "Ve."), ("Hi.", "Hola.")]
    with pytest.raises(CorpusError, match="must name 'es' and 'en'"):
        read(path, "anki", columns=("en", "fr"))


@pytest.mark.parametrize("header", ["es,en", "spanish,english", "Source,Target", "English,Spanish", "id,en,notes,es"])
def test_csv_header_names_the_columns(tmp_path: Path, header: str) -> None:
    names = header.split(",")
    row = {"es": "Hola, amigo.", "en": 'He said "hi",\nfriend.', "id": "7", "notes": ""}
    aliases = {"spanish": "es", "source": "es", "english": "en", "target": "en"}
    cells = [row[aliases.get(name.lower(), name)] for name in names]
    path = tmp_path / "corpus.csv"
    path.write_text(header + "\n" + ",".join('"' + c.replace('"', '""') + '"' for c in cells) + "\n", encoding="utf-8")
    pairs, _ = read(path)
    assert texts(pairs) == [("Hola, amigo.", 'He said "hi",\nfriend.')]  # quoted commas and newlines survive
    assert pairs[0].origin == f"{path}:2"


def test_csv_without_usable_header_is_an_error_on_line_one(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text("hola,hello\nadiós,bye\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=at(path, 1) + r": the header must name the source and target"):
        read(path)


# ----------------------------------------------------------------------------------------- bad input, every format


@pytest.mark.parametrize("fmt", FORMATS)
def test_invalid_utf8(tmp_path: Path, fmt: str) -> None:
    path, es, offset = write_corpus(tmp_path, fmt, [GOOD[0], (b"d\xffos", b"two"), GOOD[2]])
    with pytest.raises(CorpusError, match=at(es, 2 + offset) + r": invalid UTF-8 .*expected UTF-8"):
        read(path)
    pairs, report = read(path, skip_bad=True)
    assert_counted(report, "invalid UTF-8", f"{es}:{2 + offset}", 2, pairs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_side(tmp_path: Path, fmt: str) -> None:
    path, es, offset = write_corpus(tmp_path, fmt, [GOOD[0], (b"  ", b"two"), GOOD[2]])
    with pytest.raises(CorpusError, match=at(es, 2 + offset) + r": empty source sentence; expected text on both sides"):
        read(path)
    pairs, report = read(path, skip_bad=True)
    assert_counted(report, "empty side", f"{es}:{2 + offset}", 2, pairs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_byte_order_mark(tmp_path: Path, fmt: str) -> None:
    path, es, _ = write_corpus(tmp_path, fmt, GOOD, bom=True)
    with pytest.raises(CorpusError, match=at(es, 1) + r": starts with a UTF-8 byte-order mark"):
        read(path)
    pairs, report = read(path, skip_bad=True)  # skipping: the mark is removed, the line kept, the repair counted
    assert texts(pairs)[0] == ("uno", "one")
    assert report.repaired["byte-order mark"] == 1 and f"{es}:1" in report.examples["byte-order mark"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_crlf_line_endings(tmp_path: Path, fmt: str) -> None:
    path, es, _ = write_corpus(tmp_path, fmt, GOOD, crlf=True)
    with pytest.raises(CorpusError, match=at(es, 1) + r": Windows \(CRLF\) line ending; expected LF"):
        read(path)
    pairs, report = read(path, skip_bad=True)
    assert texts(pairs) == [("uno", "one"), ("dos", "two"), ("tres", "three")]
    assert report.repaired["CRLF line ending"] >= 3 and not report.skipped


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("content", [b"", b"\n \n", b"\xef\xbb\xbf"])
def test_empty_file_is_always_an_error(tmp_path: Path, fmt: str, content: bytes) -> None:
    path, es, _ = write_corpus(tmp_path, fmt, GOOD)
    for file in (tmp_path / "corpus.es", tmp_path / "corpus.en") if fmt == "moses" else (es,):
        file.write_bytes(content)
    for skip_bad in (False, True):
        with pytest.raises(CorpusError, match=re.escape(f"{es}: file is ") + "(empty|blank: its 2 lines hold only)"):
            read(path, fmt, skip_bad)


@pytest.mark.parametrize("fmt", ["auto", *FORMATS])
def test_missing_file_is_always_an_error(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "nowhere.tsv"
    for skip_bad in (False, True):
        with pytest.raises(CorpusError, match=r"nowhere.* file not found"):
            read(path, fmt, skip_bad)


@pytest.mark.parametrize("fmt", ["tsv", "anki", "csv"])
def test_wrong_number_of_fields(tmp_path: Path, fmt: str) -> None:
    path, es, offset = write_corpus(tmp_path, fmt, GOOD)
    lines = es.read_bytes().split(b"\n")
    lines[offset + 1] = {"tsv": b"dos\ttwo\textra", "anki": b"two", "csv": b"dos,two,extra"}[fmt]
    es.write_bytes(b"\n".join(lines))
    expected = {"tsv": "expected 2 tab-separated", "anki": "expected 2 or 3 tab-separated", "csv": "expected 2 comma"}
    with pytest.raises(CorpusError, match=at(es, 2 + offset) + rf": {expected[fmt]}.*found (3|1)"):
        read(path, fmt)
    pairs, report = read(path, fmt, skip_bad=True)
    assert_counted(report, "wrong number of fields", f"{es}:{2 + offset}", 2, pairs)


@pytest.mark.parametrize("fmt", ["tsv", "csv", "moses"])
def test_blank_line(tmp_path: Path, fmt: str) -> None:
    path, es, offset = write_corpus(tmp_path, fmt, [GOOD[0], (b"", b""), GOOD[2]])
    if fmt != "moses":
        es.write_bytes(es.read_bytes().replace(b"\n,\n", b"\n\n").replace(b"\n\t\n", b"\n\n"))  # really empty
    with pytest.raises(CorpusError, match=at(es, 2 + offset) + r": blank line"):
        read(path, fmt)
    pairs, report = read(path, fmt, skip_bad=True)
    assert_counted(report, "blank line", f"{es}:{2 + offset}", 2, pairs)


def test_moses_files_with_different_line_counts_are_always_an_error(tmp_path: Path) -> None:
    path, _, _ = write_corpus(tmp_path, "moses", GOOD)
    (tmp_path / "corpus.en").write_bytes(b"one\ntwo\n")
    for skip_bad in (False, True):
        with pytest.raises(CorpusError) as err:
            read(path, skip_bad=skip_bad)
        message = str(err.value)
        assert str(tmp_path / "corpus.es") in message and str(tmp_path / "corpus.en") in message
        assert "has 3 lines" in message and "has 2" in message


def test_moses_missing_partner_names_both_files(tmp_path: Path) -> None:
    path, _, _ = write_corpus(tmp_path, "moses", GOOD)
    (tmp_path / "corpus.en").unlink()
    with pytest.raises(CorpusError, match=r"corpus\.en: file not found \(a Moses pair needs .*corpus\.es and"):
        read(path)


def test_csv_unbalanced_quote_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text('es,en\nuno,one\n"d"os,two\ntres,three\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=at(path, 3) + r": .*expected comma-separated fields"):
        read(path)
    pairs, report = read(path, skip_bad=True)
    assert_counted(report, "malformed CSV", f"{path}:3", 2, pairs)


def test_unknown_format_and_misplaced_columns_are_errors(tmp_path: Path) -> None:
    path, _, _ = write_corpus(tmp_path, "csv", GOOD)
    with pytest.raises(CorpusError, match="unknown format 'xml'"):
        read(path, "xml")
    with pytest.raises(CorpusError, match="columns="):
        read(path, columns=("es", "en"))


def test_skip_mode_counts_every_reason_and_accounts_for_every_line(tmp_path: Path) -> None:
    path = tmp_path / "mixed.tsv"
    path.write_bytes(b"uno\tone\r\n\n\tx\nbad\xfe\ty\na\tb\tc\ndos\ttwo\n")
    with pytest.raises(CorpusError, match=at(path, 1) + ": "):
        read(path)
    pairs, report = read(path, skip_bad=True)
    assert texts(pairs) == [("uno", "one"), ("dos", "two")]
    assert dict(report.skipped) == {"blank line": 1, "empty side": 1, "invalid UTF-8": 1, "wrong number of fields": 1}
    assert dict(report.repaired) == {"CRLF line ending": 1}
    assert report.read == 6
    cleaned = clean(pairs, CleanConfig(), report)
    assert report.read == report.kept + sum(report.skipped.values()) == len(cleaned) + 4


# ----------------------------------------------------------------------------------------- cleaning


def test_clean_normalises_and_counts_every_drop() -> None:
    decomposed = unicodedata.normalize("NFD", "Una canción.")
    pairs = [
        Pair("Una canción.", "A song.", "f:1"),
        Pair(f"  {decomposed}  ", "A  song.", "f:2"),  # the same pair after NFC and whitespace cleanup
        Pair("uno dos tres cuatro cinco seis", "one", "f:3"),  # ratio 6 > 3
        Pair(" ".join(["palabra"] * 12), " ".join(["word"] * 12), "f:4"),  # longer than max_tokens
        Pair("Hola.", "Hello.", "f:5"),
    ]
    report = ReadReport(read=5)
    kept = clean(pairs, CleanConfig(min_tokens=1, max_tokens=10, max_ratio=3.0), report)
    assert texts(kept) == [("Una canción.", "A song."), ("Hola.", "Hello.")]
    assert all(unicodedata.is_normalized("NFC", p.src) for p in kept)
    assert dict(report.skipped) == {"duplicate pair": 1, "length-ratio filter": 1, "length filter": 1}
    assert report.examples["duplicate pair"] == ["f:2"] and report.kept == 2


# ----------------------------------------------------------------------------------------- splitting


def tatoeba_like(n_english: int, seed: int = 0) -> list[Pair]:
    """Several Spanish variants per English sentence, and some Spanish sentences with two English ones."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n_english):
        for variant in range(rng.randint(1, 4)):
            pairs.append(Pair(f"Frase {i} variante {variant}.", f"Sentence {i}."))
        if i % 7 == 0:
            pairs.append(Pair(f"frase {i} variante 0", f"Phrase {i}!"))  # same match_key as variant 0
    return pairs


def test_split_never_shares_a_sentence_across_parts_and_is_deterministic() -> None:
    pairs = tatoeba_like(300)
    parts = split(pairs, dev_size=60, test_size=80, seed=7)
    named = {"train": parts.train, "dev": parts.dev, "test": parts.test}
    assert sum(len(part) for part in named.values()) == len(pairs)
    assert sorted(texts(pairs)) == sorted(t for part in named.values() for t in texts(part))
    assert len(parts.dev) >= 60 and len(parts.test) >= 80
    for side in ("src", "tgt"):
        keys = {name: {match_key(getattr(p, side)) for p in part} for name, part in named.items()}
        assert not keys["train"] & keys["dev"] and not keys["train"] & keys["test"] and not keys["dev"] & keys["test"]
    again = split(pairs, dev_size=60, test_size=80, seed=7)
    assert (texts(again.train), texts(again.dev), texts(again.test)) == tuple(texts(p) for p in named.values())
    assert texts(split(pairs, 60, 80, seed=8).test) != texts(parts.test)


def test_write_pairs_round_trips_and_refuses_tabs(tmp_path: Path) -> None:
    pairs = [Pair("Hola, ¿qué tal?", "Hi, how are you?"), Pair("Adiós.", "Bye.")]
    write_pairs(pairs, tmp_path / "out.tsv")
    assert texts(read(tmp_path / "out.tsv", "tsv")[0]) == texts(pairs)
    with pytest.raises(CorpusError, match="tab or newline"):
        write_pairs([Pair("a\tb", "c")], tmp_path / "bad.tsv")


def test_a_pairs_file_line_longer_than_a_segment_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "train.tsv"  # what distill --pairs reads: one 3 MB line after a good one
    path.write_text("Hola.\tHello.\n" + "a" * (MAX_SEGMENT + 1) + "\tb\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"train.tsv:2: a field of {MAX_SEGMENT + 1:,} characters"):
        read_pairs_file(path)


# ----------------------------------------------------------------------------------------- UTF-16 and UTF-32

MARKS = [
    ("utf-16-le", b"\xff\xfe", "UTF-16 (little-endian)"),
    ("utf-16-be", b"\xfe\xff", "UTF-16 (big-endian)"),
    ("utf-32-le", b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),  # starts with the UTF-16-LE mark
    ("utf-32-be", b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("codec", "mark", "name"), MARKS)
def test_utf16_and_utf32_are_named_by_their_mark_and_read_when_skipping(
    tmp_path: Path, fmt: str, codec: str, mark: bytes, name: str
) -> None:
    path, es, _ = write_corpus(tmp_path, fmt, [("año".encode(), b"year"), *GOOD[1:]], crlf=True)  # as Notepad saves
    files = [tmp_path / "corpus.es", tmp_path / "corpus.en"] if fmt == "moses" else [es]
    for file in files:
        file.write_bytes(mark + file.read_bytes().decode().encode(codec))
    assert detect_format(path) == fmt
    with pytest.raises(CorpusError, match=at(es, 1) + rf": {re.escape(name)} text \(byte-order mark .*expected UTF-8"):
        read(path)  # strict, as python -m training.train reads by default
    pairs, report = read(path, skip_bad=True)  # as the Train page reads
    assert texts(pairs) == [("año", "year"), ("dos", "two"), ("tres", "three")]
    assert report.repaired[f"{name} text, read and converted to UTF-8"] == len(files)
    assert f"{es}:1" in report.examples[f"{name} text, read and converted to UTF-8"]
    assert not report.skipped


@pytest.mark.parametrize(
    ("codec", "guess"),
    [("utf-16-le", "UTF-16 (little-endian)"), ("utf-16-be", "UTF-16 (big-endian)"), ("utf-32-le", "UTF-32")],
)
def test_utf16_without_a_mark_is_always_refused_as_looking_like_utf16(tmp_path: Path, codec: str, guess: str) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_bytes("uno\tone\ndos\ttwo\n".encode(codec))
    for skip_bad in (False, True):
        message = rf": \d+ of the first \d+ bytes are NUL: this looks like {re.escape(guess)} text without a byte-order"
        with pytest.raises(CorpusError, match=re.escape(str(path)) + message + r".*save the file as UTF-8"):
            read(path, skip_bad=skip_bad)


def test_broken_utf16_and_a_bare_mark_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_bytes(b"\xff\xfe" + "uno\tone\n".encode("utf-16-le") + b"\x00\xd8" + "x\ty\n".encode("utf-16-le"))
    with pytest.raises(CorpusError, match=r"corpus\.tsv:\d+: invalid UTF-16 \(little-endian\)"):
        read(path, "tsv", skip_bad=True)  # a lone surrogate: even skipping, the rest of the file cannot be trusted
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(CorpusError, match="file is empty"):
        read(path, "tsv", skip_bad=True)


def test_reading_streams_one_line_at_a_time(tmp_path: Path) -> None:
    path, _, _ = write_corpus(tmp_path, "tsv", GOOD * 1000)
    pairs = corpus_pairs(path, "tsv")
    assert texts([next(pairs)]) == [("uno", "one")]  # the rest is not read yet
    assert len(list(pairs)) == 2999
