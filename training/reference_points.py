"""``python -m training.reference_points --run DIR``: is this score good? The run's model beside reference points on
the same dev sentences: a floor (the source copied as the translation) and, where the pair is es→en, the shipped
model (which may have trained on some of these sentences: a yardstick, not a contest) and Apertium, the rule-based
translator, where it is installed (``translate/apertium.py``). Writes ``REFERENCES_FILE`` into the run folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from data.corpus import CorpusError, read_pairs_file
from model.run_dir import CONFIG_FILE, WEIGHTS_FILE, split_file
from model.weights import ModelLoadError
from training.evaluate import corpus_scores, score
from training.prepare import model_data
from translate import apertium
from translate.translator import DEFAULT_MODEL, Translator

REFERENCES_FILE = "reference_points.json"
MAX_SENTENCES = 300  # dev sentences scored: the same first ones for every model
SHIPPED_PAIR = ("es", "en")


def reference_points(run_dir: Path, shipped: Path = DEFAULT_MODEL, n: int = MAX_SENTENCES) -> dict:
    """BLEU and chrF of the run's model, the copy-the-source floor and (es→en) the shipped model on ``n`` dev pairs."""
    dev = read_pairs_file(split_file(run_dir, "dev"))[:n]
    if not dev:
        raise CorpusError(f"{split_file(run_dir, 'dev')}: no dev pairs")
    rows = {
        "this run": score(Translator.load(run_dir), dev),
        "copy the source (floor)": corpus_scores([p.src for p in dev], [p.tgt for p in dev]),
    }
    data = model_data(run_dir)
    usable = all((shipped / name).is_file() for name in (CONFIG_FILE, WEIGHTS_FILE))
    if data is not None and data.direction == SHIPPED_PAIR and usable and shipped.resolve() != run_dir.resolve():
        rows[f"shipped model ({shipped.name})"] = score(Translator.load(shipped), dev)
    rule_based = (
        apertium.translate([p.src for p in dev]) if data is not None and data.direction == apertium.PAIR else None
    )
    if rule_based is not None:
        rows["Apertium spa-eng (rule-based)"] = corpus_scores(rule_based, [p.tgt for p in dev])
    scores = {name: {"bleu": row["bleu"], "chrf": row["chrf"]} for name, row in rows.items()}
    return {"sentences": len(dev), "scores": scores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.reference_points", description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished run directory")
    parser.add_argument("--shipped", type=Path, default=DEFAULT_MODEL, help="the shipped model directory")
    args = parser.parse_args(argv)
    try:
        points = reference_points(args.run, args.shipped)
    except (CorpusError, ModelLoadError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    (args.run / REFERENCES_FILE).write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
