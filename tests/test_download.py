"""``python -m data.download`` against a local HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from data.corpus import read_corpus
from data.download import CORPUS_FILE, MEMBER, DownloadError, download, main

ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #{} (ana) & #{} (bo)"
ENGLISH_SPANISH = [("Go.", "Ve."), ("Hi, Tom.", "Hola, Tom."), ("Thanks!", "¡Gracias!")]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No request log on stderr."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, served directory) of an HTTP server on 127.0.0.1 holding a good zip and broken ones."""
    root = tmp_path_factory.mktemp("www")
    lines = "".join(f"{en}\t{es}\t{ATTRIBUTION.format(i, i + 1)}\n" for i, (en, es) in enumerate(ENGLISH_SPANISH))
    with zipfile.ZipFile(root / "spa-eng.zip", "w") as zipped:
        zipped.writestr(MEMBER, lines + "Bad line without tabs\n")
        zipped.writestr("_about.txt", "Tab-delimited Bilingual Sentence Pairs\n")
    with zipfile.ZipFile(root / "other.zip", "w") as zipped:
        zipped.writestr("fra.txt", "Go.\tVa !\n")
    (root / "page.zip").write_text("<html>Not Found</html>\n")
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def test_download_writes_spanish_first_tsv_and_attribution(server: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = server
    result = download(f"{base}/spa-eng.zip", tmp_path / "out", progress=True)
    assert result.corpus == tmp_path / "out" / CORPUS_FILE
    pairs = read_corpus(result.corpus, "tsv")
    assert [(p.src, p.tgt) for p in pairs] == [(es, en) for en, es in ENGLISH_SPANISH]
    assert dict(result.report.skipped) == {"wrong number of fields": 1}  # the bad line is counted, not hidden
    note = result.note.read_text(encoding="utf-8")
    assert "CC BY 2.0 FR" in note and "Tatoeba contributors" in note and "manythings.org/anki" in note
    assert "wrong number of fields" in note
    assert (tmp_path / "out" / "manythings-about.txt").is_file()
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(["README.md", "manythings-about.txt", MEMBER, CORPUS_FILE])  # no leftovers


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.zip", "HTTP error 404"),
        ("page.zip", "not a zip archive"),
        ("other.zip", f"the zip has no {MEMBER} .*it holds fra.txt"),
    ],
)
def test_download_errors_name_the_url_and_the_problem(
    server: tuple[str, Path], tmp_path: Path, name: str, message: str
) -> None:
    base, _ = server
    with pytest.raises(DownloadError, match=f"{base}/{name}: {message}"):
        download(f"{base}/{name}", tmp_path, progress=False)
    assert not (tmp_path / CORPUS_FILE).exists()
    assert not list(tmp_path.glob("*.partial"))


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DownloadError, match=f"127.0.0.1:{port}/spa-eng.zip: cannot download"):
        download(f"http://127.0.0.1:{port}/spa-eng.zip", tmp_path, progress=False)
    with pytest.raises(DownloadError, match="not a valid URL"):
        download("spa-eng.zip", tmp_path, progress=False)


def test_command_line_exit_status_and_messages(
    server: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = server
    assert main(["--url", f"{base}/spa-eng.zip", "--out", str(tmp_path / "ok"), "--no-progress"]) == 0
    assert f"wrote 3 pairs to {tmp_path / 'ok' / CORPUS_FILE}" in capsys.readouterr().out
    assert main(["--url", f"{base}/missing.zip", "--out", str(tmp_path / "bad"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "HTTP error 404" in err
