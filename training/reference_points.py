"""``python -m training.reference_points --run DIR``: is this score good, and may it be the default? The run's model
beside reference points on the same dev sentences: a floor (the source copied as the translation), the current default
model of the run's direction (``--default``; the shipped model when the directions match: it may have trained on
some of these sentences, a yardstick, not a contest). Each model's outputs that loop are counted, and its canary
sentences scored where the lab has a list for the direction (``training.phrases.canary_list``). Writes
``REFERENCES_FILE`` into the run folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from data.corpus import CorpusError, read_pairs_file
from model.run_dir import REFERENCES_FILE, split_file
from model.weights import ModelLoadError
from training.evaluate import corpus_scores, loops, score
from training.phrases import canary_list, read_phrases, score_phrases
from training.prepare import model_data
from translate.model_dir import holds_network
from translate.translator import DEFAULT_MODEL, Translator

MAX_SENTENCES = 300  # dev sentences scored: the same first ones for every model
# The rows' names; the default model's row is "default model (NAME)".
RUN, FLOOR, DEFAULT = "this run", "copy the source (floor)", "default model"


def direction_of(model_dir: Path) -> tuple[str, str] | None:
    data = model_data(model_dir)
    return data.direction if data is not None else None


def reference_points(run_dir: Path, default: Path | None, n: int = MAX_SENTENCES) -> dict[str, Any]:
    """BLEU, chrF and looping outputs of the run's model, the copy-the-source floor and ``default`` (the current default
    model of the run's direction, when there is one) on ``n`` dev pairs; the canaries of the direction, when listed."""
    dev = read_pairs_file(split_file(run_dir, "dev"))[:n]
    if not dev:
        raise CorpusError(f"{split_file(run_dir, 'dev')}: no dev pairs")
    models = {RUN: Translator.load(run_dir)}
    if default is not None and default.resolve() != run_dir.resolve():
        models[f"{DEFAULT} ({default.name})"] = Translator.load(default)
    rows: dict[str, dict[str, Any]] = {name: score(model, dev) for name, model in models.items()}
    rows[FLOOR] = corpus_scores([p.src for p in dev], [p.tgt for p in dev])
    direction = direction_of(run_dir)
    scores = {
        name: {"bleu": row["bleu"], "chrf": row["chrf"], "loops": loops(row.get("hypotheses", []))}
        for name, row in rows.items()
    }
    listed = canary_list(*direction) if direction is not None else None
    canaries = [] if listed is None else read_phrases(listed)
    for name, model in models.items() if canaries else ():
        result = score_phrases(model, canaries)
        wrong = [f'"{r["source"]}" → "{r["translation"]}"' for r in result["rows"] if not r["accepted"]]
        scores[name] |= {"canaries": result["accepted"], "canaries_wrong": wrong}
    baseline = str(default.resolve()) if len(models) > 1 and default is not None else None
    return {"sentences": len(dev), "canaries": len(canaries), "default": baseline, "scores": scores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.reference_points", description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a run directory with a model")
    parser.add_argument(
        "--default",
        type=Path,
        help="the current default model of the run's direction (else the shipped model, when "
        "its direction is the run's)",
    )
    parser.add_argument("--no-default", action="store_true", help="the run's direction has no default model yet")
    args = parser.parse_args(argv)
    default = args.default
    shipped = holds_network(DEFAULT_MODEL)
    if default is None and not args.no_default and shipped and direction_of(DEFAULT_MODEL) == direction_of(args.run):
        default = DEFAULT_MODEL
    try:
        points = reference_points(args.run, None if args.no_default else default)
    except (CorpusError, ModelLoadError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    (args.run / REFERENCES_FILE).write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
