"""``python -m workshop phrases``: the everyday phrase list scored by exact match (``training/phrases.py``), and
which phrases a model's training held."""

from __future__ import annotations

import argparse
from pathlib import Path

from data.corpus import CorpusError, match_key, normalise
from data.noise import typed
from training.phrases import read_phrases, score_phrases
from training.prepare import model_split
from training.reference_points import direction_of
from translate.cli import MAX_BEAM, decode_options
from translate.settings import REPO_ROOT
from translate.translator import DEFAULT_MODEL, Translator


def typed_key(text: str) -> str:
    """Key that ignores how a sentence was typed (case, accents, ¿¡, commas, final punctuation)."""
    return match_key(typed(normalise(text)))


def everyday_list(model_dir: Path) -> Path:
    """The everyday list of a model's direction: ``data/everyday-SRC-TGT.tsv`` (Spanish→English's by default)."""
    src, tgt = direction_of(model_dir) or ("es", "en")
    return REPO_ROOT / "data" / f"everyday-{src}-{tgt}.tsv"


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
    parser.add_argument("--phrases", type=Path, help="phrase list (default: the model's direction's everyday list)")
    parser.add_argument("--beam", type=int, default=1, help=f"beam size, 1 (greedy) to {MAX_BEAM}")
    args = parser.parse_args(argv)
    options = decode_options(args)
    phrases = read_phrases(args.phrases or everyday_list(args.model))
    result = score_phrases(Translator.load(args.model), phrases, options)
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
