"""TMX translation memories: pairs by xml:lang, inline codes left out, errors naming the <tu>, no DTD or entities
(no XXE); read by the command line and by the Train page's checker, and trained on end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import toy_pairs

from data import tmx
from data.corpus import CleanConfig, CorpusError, ReadReport, detect_format, read_corpus
from data.readers import Reading
from data.tmx import language, tmx_pairs
from jobs.corpus_check import CorpusSource, check_corpus
from training.train import main as train

ROOT = Path(__file__).resolve().parent.parent
HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="es" datatype="plaintext"/>\n<body>\n'
)
TAIL = "</body></tmx>\n"


def tu(es: str | None, en: str | None, es_tag: str = "es", en_tag: str = "en-US") -> str:
    tuvs = [f'<tuv xml:lang="{tag}"><seg>{text}</seg></tuv>' for tag, text in ((es_tag, es), (en_tag, en)) if text]
    return f"<tu>{''.join(tuvs)}</tu>\n"


def write(path: Path, body: str, head: str = HEAD) -> Path:
    path.write_text(head + body + TAIL, encoding="utf-8")
    return path


def test_pairs_come_from_each_unit_by_language(tmp_path: Path) -> None:
    body = (
        tu("Hola.", "Hello.")
        + tu(
            'Pulse <bpt i="1">&lt;b&gt;</bpt>Aceptar<ept i="1">&lt;/b&gt;</ept>.',
            "Press OK.",
            es_tag="ES-es",
            en_tag="EN",
        )
        + '<tu><tuv lang="de"><seg>Hallo.</seg></tuv>'
        '<tuv xml:lang="en_GB"><seg>Hi &amp; bye.</seg></tuv><tuv xml:lang="es"><seg>Hola y adiós.</seg></tuv></tu>'
    )
    path = write(tmp_path / "memory.tmx", body)
    pairs = read_corpus(path)
    assert [(p.src, p.tgt) for p in pairs] == [
        ("Hola.", "Hello."),
        ("Pulse Aceptar.", "Press OK."),
        ("Hola y adiós.", "Hi & bye."),
    ]
    assert pairs[1].origin == f"{path}:<tu> 2 (line 5)"
    first = next(iter(tmx_pairs(path, Reading("en", "es"))))  # either direction
    assert (first.src, first.tgt) == ("Hello.", "Hola.")
    assert language("es-ES") == language("ES_es") == "es"


def test_a_tmx_file_is_detected_by_extension_or_content(tmp_path: Path) -> None:
    body = tu("Hola.", "Hello.")
    assert detect_format(write(tmp_path / "m.tmx", body)) == "tmx"
    assert detect_format(write(tmp_path / "m.xml", body)) == "tmx"


@pytest.mark.parametrize(
    "head",
    [
        '<?xml version="1.0"?>\n<!DOCTYPE tmx [<!ENTITY lol "lol">]>\n<tmx><body>\n',  # an internal entity
        '<?xml version="1.0"?>\n<!DOCTYPE tmx SYSTEM "tmx14.dtd" [<!ELEMENT tmx ANY>]>\n<tmx><body>\n',  # a declaration
        '<?xml version="1.0"?>\n<!DOCTYPE tmx [<!ENTITY a "aa"><!ENTITY b "&a;&a;&a;&a;">]>\n<tmx><body>\n',  # laughs
    ],
)
def test_a_document_type_or_entity_is_refused(tmp_path: Path, head: str) -> None:
    with pytest.raises(CorpusError, match=r"m.tmx:3: a document type or entity declaration .*before <tmx>"):
        read_corpus(write(tmp_path / "m.tmx", tu("Hola.", "Hello."), head))


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE tmx SYSTEM "tmx14.dtd">',  # OmegaT
        '<!DOCTYPE tmx PUBLIC "-//LISA OSCAR:1998//DTD for Translation Memory eXchange//EN" "tmx14.dtd">',  # Trados
        '<!DOCTYPE tmx SYSTEM "http://127.0.0.1:9/never-fetched.dtd">',
    ],
)
def test_a_dtd_named_by_its_identifier_is_read_and_never_fetched(tmp_path: Path, doctype: str) -> None:
    head = HEAD.replace("\n", f"\n{doctype}\n", 1)
    pairs = read_corpus(write(tmp_path / "m.tmx", tu("Hola.", "Hello.") + tu("Adiós.", "Bye."), head))
    assert [(p.src, p.tgt) for p in pairs] == [("Hola.", "Hello."), ("Adiós.", "Bye.")]


def test_an_external_entity_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    head = f'<?xml version="1.0"?>\n<!DOCTYPE tmx [<!ENTITY xxe SYSTEM "file://{secret}">]>\n<tmx><body>\n'
    with pytest.raises(CorpusError, match="document type or entity") as err:
        read_corpus(write(tmp_path / "m.tmx", tu("&xxe;", "Hello."), head))
    assert "TOP SECRET" not in str(err.value)


def test_an_entity_only_an_unread_dtd_could_define_is_refused(tmp_path: Path) -> None:
    dtd = tmp_path / "secret.dtd"
    dtd.write_text('<!ENTITY xxe "TOP SECRET">', encoding="utf-8")
    head = HEAD.replace("\n", f'\n<!DOCTYPE tmx SYSTEM "{dtd.as_uri()}">\n', 1)
    with pytest.raises(CorpusError, match=r"m.tmx:5: .*'xxe'") as err:  # not dropped from "Hola, ."
        read_corpus(write(tmp_path / "m.tmx", tu("Hola, &xxe;.", "Hello."), head))
    assert "TOP SECRET" not in str(err.value)


@pytest.mark.parametrize(
    ("declared", "data", "message"),
    [
        ("EBCDIC-XYZ", b"", r"m.tmx:1: .*EBCDIC-XYZ.*save the file as UTF-8"),
        ("cp037", b"", r"m.tmx:1: .*cp037.*save the file as UTF-8"),
        ("UTF-16", b"", r'm.tmx:1: not well-formed XML .*says encoding="UTF-16"'),
        ("UTF-8", "Adiós".encode("latin-1"), r'm.tmx:4: not well-formed XML .*says encoding="UTF-8"'),
    ],
)
def test_an_unknown_or_lying_encoding_is_one_line(tmp_path: Path, declared: str, data: bytes, message: str) -> None:
    path = tmp_path / "m.tmx"
    path.write_bytes(HEAD.replace("UTF-8", declared).encode() + b"<tu><seg>" + data + b"</seg></tu>" + TAIL.encode())
    with pytest.raises(CorpusError, match=message) as err:
        read_corpus(path)
    assert "\n" not in str(err.value)
    check = check_corpus(CorpusSource(path), CleanConfig())
    assert not check.ok and declared in check.problems[0]


def test_the_cli_says_one_line_for_an_unknown_encoding(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "m.tmx"
    path.write_text(HEAD.replace("UTF-8", "EBCDIC-XYZ") + tu("Hola.", "Hello.") + TAIL, encoding="utf-8")
    argv = ["--config", "configs/tiny.toml", "--corpus", str(path), "--out", str(tmp_path / "run")]
    assert train(argv) == 2
    err = capsys.readouterr().err
    assert "EBCDIC-XYZ" in err and str(path) in err and "Traceback" not in err


def test_a_unit_missing_a_language_names_the_unit(tmp_path: Path) -> None:
    path = write(tmp_path / "m.tmx", tu("Hola.", "Hello.") + tu("Adiós.", None) + tu("Gracias.", "Thanks."))
    with pytest.raises(CorpusError, match=r"<tu> 2 \(line 5\): no <tuv xml:lang=\"en\"> \(languages: es\)"):
        read_corpus(path)
    report = ReadReport()
    assert len(read_corpus(path, how=Reading(skip_bad=True), report=report)) == 2
    assert report.read == 3 and report.skipped["missing language"] == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (tu("Hola.", "Hello.", en_tag="fr"), 'no <tuv xml:lang="en">'),
        ("", "no <tu> translation units"),
        ("<tu><tuv xml:lang='es'><seg>Hola</tuv></tu>", r"m.tmx:4: not well-formed XML \(.*seg.*tuv"),
        ("<tu><tuv xml:lang='es'><seg>Hola", r"m.tmx:4: not well-formed XML \(.*seg"),  # truncated
    ],
)
def test_bad_files_name_what_is_wrong(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(CorpusError, match=message):
        read_corpus(write(tmp_path / "m.tmx", body), how=Reading(skip_bad=True))


def toy_tmx(path: Path, n: int) -> Path:
    return write(path, "".join(tu(es, en) for es, en in toy_pairs(n)))


def test_the_train_page_checks_a_tmx_upload(tmp_path: Path) -> None:
    check = check_corpus(CorpusSource(toy_tmx(tmp_path / "m.tmx", 300)), CleanConfig())
    assert check.ok, check.problems
    assert check.fmt == "tmx" and check.read == 300 and check.sample


@pytest.mark.slow
def test_a_model_trains_on_a_tmx_corpus(tmp_path: Path) -> None:
    corpus = toy_tmx(tmp_path / "m.tmx", 300)
    out = tmp_path / "run"
    argv = [
        "--config",
        "configs/tiny.toml",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--optim.max_steps=20",
        "--run.eval_every=10",
    ]
    assert train(argv) == 0
    report = json.loads((out / "data_report.json").read_text(encoding="utf-8"))
    assert report["formats"] == {str(corpus): "tmx"} and report["read"] == 300
    assert (out / "splits" / "train.tsv").read_text(encoding="utf-8").count("\n") > 100


def hostile(kind: str, n: int) -> str:
    """A <tu> that a hostile file makes huge: many attributes, deep or many inline codes, one long segment, or
    many segments in other languages."""
    if kind == "attributes":
        attrs = " ".join(f'a{i}="{i}"' for i in range(n))
        return f'<tu {attrs}><tuv xml:lang="es"><seg>Hola.</seg></tuv><tuv xml:lang="en"><seg>Hi.</seg></tuv></tu>\n'
    if kind == "depth":
        return tu("<ph>" * n + "x" + "</ph>" * n, "Hello.")
    if kind == "codes":
        return tu("a<ph/>" * n, "Hello.")
    if kind == "languages":
        return tu("Hola.", "Hello.").replace(
            "</tu>", f'<tuv xml:lang="de"><seg>{"x" * 50_000}</seg></tuv>' * n + "</tu>"
        )
    return tu("palabra " * n, "Hello.")


@pytest.mark.parametrize(
    ("kind", "n", "message"),
    [
        ("attributes", 100, r":5: <tu> 2 \(line 5\): <tu> has 100 attributes; at most 64 are read"),
        ("depth", 100, r":5: <tu> 2 \(line 5\): elements nested over 64 deep \(at <ph>\)"),
        ("segment", 20_000, r":5: <tu> 2 \(line 5\): a <seg> of over 100,000 characters"),
        ("codes", 5_000, r":5: <tu> 2 \(line 5\): over 4,096 elements"),
        ("languages", 40, rf":5: <tu> 2 \(line 5\): over {tmx.MAX_UNIT:,} bytes"),
    ],
)
def test_a_unit_too_big_to_be_real_is_refused_naming_it(tmp_path: Path, kind: str, n: int, message: str) -> None:
    path = write(tmp_path / "m.tmx", tu("Hola.", "Hello.") + hostile(kind, n) + tu("Sí.", "Yes."))
    with pytest.raises(CorpusError, match=message):
        read_corpus(path, how=Reading(skip_bad=True))
    check = check_corpus(CorpusSource(path), CleanConfig())
    assert not check.ok and "<tu> 2" in check.problems[0]


def test_one_huge_tag_is_refused_before_the_parser_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tmx, "BLOCK", 256)
    monkeypatch.setattr(tmx, "MAX_RUN", 4096)
    path = write(tmp_path / "m.tmx", tu("Hola.", "Hello.") + hostile("attributes", 5_000))
    with pytest.raises(CorpusError, match=r"m.tmx:5: after <tu> 1: over 4,096 bytes with no tag completed"):
        read_corpus(path)


def read_in_a_child(path: Path) -> tuple[str, float, int]:
    """The error reading ``path`` gives, its seconds, and the bytes its process grew by: libxml2's memory is C's, which
    tracemalloc does not see (peak resident memory over resident memory before reading)."""
    code = f"""import json, time
from data.readers import CorpusError
from data.tmx import tmx_pairs
def kb(field): return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))
before, start, error = kb("VmRSS:"), time.perf_counter(), ""
try:
    list(tmx_pairs({str(path)!r}))
except CorpusError as err:
    error = str(err)
print(json.dumps([error, time.perf_counter() - start, (kb("VmHWM:") - before) << 10]))"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    error, seconds, grown = json.loads(done.stdout)
    return error, seconds, grown


@pytest.mark.parametrize("kind", ["attributes", "depth", "segment", "codes", "languages"])
def test_a_hostile_file_is_refused_quickly_in_little_memory(tmp_path: Path, kind: str) -> None:
    n = {"attributes": 200_000, "depth": 300_000, "segment": 400_000, "codes": 500_000, "languages": 60}[kind]
    path = write(tmp_path / "m.tmx", tu("Hola.", "Hello.") + hostile(kind, n))
    size = path.stat().st_size
    assert size > 2_000_000
    error, seconds, grown = read_in_a_child(path)
    assert f"{path}:5: " in error and "\n" not in error, error
    assert seconds < 5 and grown < size, (seconds, grown, size)
