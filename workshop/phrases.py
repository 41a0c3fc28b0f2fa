"""Everyday phrases scored by exact match: what BLEU on Tatoeba cannot say ("Hola mundo" → "Hello world"?).

A phrase list is a TSV, ``source<TAB>accepted answer | another accepted answer``, ``#`` lines are comments
(``data/everyday-es-en.tsv``). A translation is accepted when, after lowercasing and removing punctuation and
extra spaces, it equals one of the answers: "Hello, world!" and "hello world" are the same answer.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from data.corpus import CorpusError, typed_key
from training.prepare import model_split
from translate.settings import REPO_ROOT
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

EVERYDAY = REPO_ROOT / "data" / "everyday-es-en.tsv"
_SPACE = re.compile(r"\s+")


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


def read_phrases(path: Path = EVERYDAY) -> list[Phrase]:
    """Every phrase of a list file; errors name the file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise PhraseListError(f"{path}: phrase list not found") from None
    except UnicodeDecodeError as err:
        raise PhraseListError(f"{path}: not UTF-8 text ({err})") from None
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


def training_sources(model_dir: Path) -> set[str] | None:
    """The ``typed_key`` of every training source of a model (``model_split``: its run's splits, or its split made
    again); None when that cannot be had (e.g. the corpus is absent)."""
    try:
        return {typed_key(p.src) for p in model_split(model_dir).train}
    except CorpusError:
        return None


def mark_seen(result: dict[str, object], seen: set[str]) -> dict[str, object]:
    """Each row marked ``seen`` (its source, however typed, is a training source) and the counts of both groups:
    phrases seen in training, and phrases the model had to generalise to."""
    rows = result["rows"]
    for row in rows:
        row["seen"] = typed_key(row["source"]) in seen
    groups = {"seen": [r for r in rows if r["seen"]], "generalised": [r for r in rows if not r["seen"]]}
    counts = {
        name: {"accepted": sum(r["accepted"] for r in group), "phrases": len(group)} for name, group in groups.items()
    }
    return {**result, **counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop phrases", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model directory")
    parser.add_argument("--phrases", type=Path, default=EVERYDAY, help="phrase list (source<TAB>answers)")
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    args = parser.parse_args(argv)
    result = score_phrases(Translator.load(args.model), read_phrases(args.phrases), DecodeOptions(args.beam))
    seen = training_sources(args.model)
    if seen is not None:
        result = mark_seen(result, seen)
    for row in result["rows"]:
        where = "" if seen is None else ("  [seen in training]" if row["seen"] else "  [new]")
        print(f"{'ok ' if row['accepted'] else 'NO '} {row['source']}  ->  {row['translation']}{where}")
    print(f"{result['accepted']}/{result['phrases']} accepted ({100 * result['share']:.0f} %)")
    if seen is None:
        print("(training data not found: which phrases training holds is unknown)")
    else:
        for name, label in (("seen", "seen in training"), ("generalised", "had to generalise (not in training)")):
            print(f"  {label}: {result[name]['accepted']}/{result[name]['phrases']} accepted")
    return 0
