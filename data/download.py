"""``python -m data.download``: fetch the manythings.org Anki Spanish–English zip and write the project's TSV."""

from __future__ import annotations

import argparse
import datetime
import hashlib
import sys
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from data.corpus import CorpusError, ReadReport, read_corpus, write_pairs
from data.readers import Reading

DEFAULT_URL = "https://www.manythings.org/anki/spa-eng.zip"
DEFAULT_OUT = "corpora/tatoeba-spa-eng"
MEMBER = "spa.txt"  # english<TAB>spanish[<TAB>attribution]
ABOUT = "_about.txt"
CORPUS_FILE = "spa-eng.tsv"  # spanish<TAB>english, the layout training reads
NOTE = """# Tatoeba Spanish–English sentence pairs (manythings.org/anki `spa-eng`)

Downloaded from {url} on {date} by `python -m data.download`.

## Licence and attribution

Creative Commons Attribution 2.0 France (CC BY 2.0 FR).
Sentences and translations: © Tatoeba contributors, https://tatoeba.org
(terms: https://tatoeba.org/eng/terms_of_use). Compiled by
www.manythings.org/anki. Any redistribution or derived dataset must keep this
attribution and licence notice. Per-pair contributors, when the export has
them, are in the third column of `{member}`.

## Files

- `{member}`: the original file from the zip, `english<TAB>spanish[<TAB>attribution]`,
  sha256 `{sha256}`.
- `{corpus}`: `spanish<TAB>english`, {kept} pairs: columns swapped, attribution
  column dropped, spaces around each sentence trimmed; nothing else changed.
  Lines read: {read}; skipped by reason: {skipped}; examples: {examples}.
- `manythings-about.txt`: the compiler's notes from the zip, when present.

This is the full export. The copy the project trained on (`shared/data/tatoeba-spa-eng`)
also removed the pairs that overlap a held-out evaluation set.
"""


class DownloadError(RuntimeError):
    """The download failed or did not contain the expected corpus; the message names the URL."""


@dataclass(frozen=True)
class Downloaded:
    corpus: Path  # spanish<TAB>english
    note: Path  # README.md with the licence and attribution
    report: ReadReport


def fetch(url: str, dest: Path, progress: bool = True, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` with a tqdm progress bar; DownloadError for HTTP and network errors."""
    received = 0
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "translation-lab (python urllib)"})
        with urllib.request.urlopen(request, timeout=timeout) as response, Path(dest).open("wb") as file:
            total = int(response.headers.get("Content-Length") or 0) or None
            name = url.rsplit("/", 1)[-1]
            with tqdm(total=total, unit="B", unit_scale=True, desc=name, disable=not progress) as bar:
                while chunk := response.read(1 << 16):
                    file.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
    except urllib.error.HTTPError as err:
        raise DownloadError(f"{url}: HTTP error {err.code} {err.reason}") from None
    except urllib.error.URLError as err:
        raise DownloadError(f"{url}: cannot download ({err.reason})") from None
    except (TimeoutError, ConnectionError) as err:
        raise DownloadError(f"{url}: download interrupted ({err})") from None
    except ValueError as err:  # urllib's "unknown url type"
        raise DownloadError(f"{url}: not a valid URL ({err})") from None
    if total is not None and received != total:
        raise DownloadError(f"{url}: incomplete download, {received} of {total} bytes")
    return Path(dest)


def extract(archive: Path, out_dir: Path, url: str) -> Path:
    """Extract ``spa.txt`` (and the compiler's ``_about.txt``) from the zip into ``out_dir``."""
    if not zipfile.is_zipfile(archive):
        head = Path(archive).read_bytes()[:40]
        raise DownloadError(f"{url}: not a zip archive (the server sent bytes starting {head!r})")
    try:
        with zipfile.ZipFile(archive) as zipped:
            names = {PurePosixPath(name).name: name for name in zipped.namelist()}
            if MEMBER not in names:
                held = ", ".join(sorted(zipped.namelist())) or "nothing"
                raise DownloadError(f"{url}: the zip has no {MEMBER} (expected the Anki export; it holds {held})")
            (out_dir / MEMBER).write_bytes(zipped.read(names[MEMBER]))
            if ABOUT in names:
                (out_dir / "manythings-about.txt").write_bytes(zipped.read(names[ABOUT]))
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as err:
        raise DownloadError(f"{url}: damaged zip archive ({err})") from None
    return out_dir / MEMBER


def convert(original: Path, out_dir: Path, url: str) -> Downloaded:
    """Write ``spa-eng.tsv`` (spanish first, no attribution column) and the licence note next to it."""
    report = ReadReport()
    pairs = read_corpus(original, "anki", Reading("es", "en", skip_bad=True, columns=("en", "es")), report)
    report.kept = len(pairs)
    corpus, note = out_dir / CORPUS_FILE, out_dir / "README.md"
    write_pairs(pairs, corpus)  # renamed in whole: a reader never sees half a corpus
    note.write_text(
        NOTE.format(
            url=url,
            date=datetime.date.today().isoformat(),
            member=MEMBER,
            corpus=CORPUS_FILE,
            sha256=hashlib.sha256(original.read_bytes()).hexdigest(),
            kept=report.kept,
            read=report.read,
            skipped=dict(report.skipped) or "none",
            examples=report.examples or "none",
        ),
        encoding="utf-8",
    )
    return Downloaded(corpus, note, report)


def download(url: str = DEFAULT_URL, out_dir: Path = Path(DEFAULT_OUT), progress: bool = True) -> Downloaded:
    """Fetch the zip, extract ``spa.txt``, write the project TSV and its attribution note into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / "download.zip.partial"
    try:
        fetch(url, archive, progress)
        original = extract(archive, out_dir, url)
    finally:
        archive.unlink(missing_ok=True)
    return convert(original, out_dir, url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m data.download", description=__doc__)
    parser.add_argument("--url", default=DEFAULT_URL, help=f"zip to download (default {DEFAULT_URL})")
    parser.add_argument("--out", default=DEFAULT_OUT, type=Path, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        result = download(args.url, args.out, progress=not args.no_progress)
    except (DownloadError, CorpusError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    skipped = dict(result.report.skipped)
    print(
        f"wrote {result.report.kept} pairs to {result.corpus} (skipped: {skipped or 'none'}); licence in {result.note}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
