"""Phrase lists scored by exact match: what BLEU cannot say ("Hola mundo" → "Hello world"?).

A phrase list is a TSV, ``source<TAB>accepted answer | another accepted answer``, ``#`` lines are comments
(``data/everyday-es-en.tsv``, ``data/canaries-es-en.tsv``). A translation is accepted when, after lowercasing and
removing punctuation and extra spaces, it equals one of the answers: "Hello, world!" and "hello world" are the same
answer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from model.bounded_read import MAX_SETTINGS_BYTES, read_text
from translate.settings import REPO_ROOT
from translate.translator import DecodeOptions, Translator

_SPACE = re.compile(r"\s+")


def canary_list(src: str, tgt: str) -> Path | None:
    """The canary sentences of a direction (``data/canaries-SRC-TGT.tsv``: plain sentences any usable model of that
    direction translates), None when the lab has none for it."""
    path = REPO_ROOT / "data" / f"canaries-{src}-{tgt}.tsv"
    return path if path.is_file() else None


class PhraseListError(ValueError):
    """A phrase list file is missing or malformed; the message names the file and line."""


@dataclass(frozen=True)
class Phrase:
    source: str
    accepted: tuple[str, ...]
    line: int  # 1-based line in its file


def normalise_answer(text: str) -> str:
    """Lowercase, punctuation and symbols removed, single spaces: "Hello, world!" → "hello world"."""
    kept = "".join(ch for ch in unicodedata.normalize("NFC", text.lower()) if unicodedata.category(ch)[0] not in "PS")
    return _SPACE.sub(" ", kept).strip()


def read_phrases(path: Path) -> list[Phrase]:
    """Every phrase of a list file; errors name the file and line."""
    lines = read_text(Path(path), MAX_SETTINGS_BYTES, PhraseListError).splitlines()
    phrases = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        answers = tuple(a.strip() for a in fields[-1].split("|") if a.strip()) if len(fields) == 2 else ()
        if len(fields) != 2 or not fields[0].strip() or not answers:
            raise PhraseListError(f"{path}:{number}: expected 'source<TAB>answer | answer ...', got {line!r}")
        phrases.append(Phrase(fields[0].strip(), answers, number))
    if not phrases:
        raise PhraseListError(f"{path}: no phrases")
    return phrases


def is_accepted(translation: str, phrase: Phrase) -> bool:
    return normalise_answer(translation) in {normalise_answer(a) for a in phrase.accepted}


def score_phrases(
    translator: Translator, phrases: list[Phrase], options: DecodeOptions | None = None
) -> dict[str, object]:
    """Share of phrases whose translation is accepted, and each translation with its verdict (greedy by default)."""
    translations = translator.translate_many([p.source for p in phrases], options or DecodeOptions())
    rows = [
        {"source": p.source, "translation": t, "accepted": is_accepted(t, p), "line": p.line}
        for p, t in zip(phrases, translations, strict=True)
    ]
    n_accepted = sum(r["accepted"] for r in rows)
    return {"accepted": n_accepted, "phrases": len(rows), "share": n_accepted / len(rows), "rows": rows}
