"""How well the page's "unsure" warning finds wrong translations: precision and recall per threshold, on dev.

The page warns when a translation's geometric-mean probability per output token is below
``lab.page.language_check.MIN_TOKEN_PROB``. Here every sentence of the model's dev split is translated greedy,
as written and as typed; a translation counts as wrong when its sentence chrF against the reference is below
``--wrong-below``; each threshold's precision (warned and wrong / warned) and recall (warned and wrong / wrong)
are printed side by side.

    python -m workshop bench uncertainty --model checkpoints/es-en [--write]

``--write`` keeps the page's threshold's figures in the model folder (``model.run_dir.DOUBT_FILE``): the page then
quotes this model's own precision, not another model's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sacrebleu

from data.noise import typed
from lab.page.language_check import MIN_TOKEN_PROB, WRONG_BELOW, doubt_of, token_prob
from model.run_dir import DOUBT_FILE
from training.prepare import model_split
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop.bounds import within

THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop bench uncertainty", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--wrong-below", type=float, default=WRONG_BELOW, help="sentence chrF under which it is wrong")
    parser.add_argument("--write", action="store_true", help=f"write the page's threshold's figures to {DOUBT_FILE}")
    args = parser.parse_args(argv)
    within("--wrong-below", args.wrong_below, 0, 100, "chrF")
    dev = model_split(args.model).dev
    translator, chrf = Translator.load(args.model), sacrebleu.metrics.CHRF()
    probs, wrong = [], []
    for sources in ([p.src for p in dev], [typed(p.src) for p in dev]):
        for t, pair in zip(translator.translate_all(sources, DecodeOptions(), batch_size=64), dev, strict=True):
            probs.append(token_prob(t))
            wrong.append(chrf.sentence_score(t.text, [pair.tgt]).score < args.wrong_below)
    n_wrong = sum(wrong)
    head = f"{args.model}: {len(probs)} dev translations (as written and typed), {n_wrong} wrong"
    print(f"{head} (sentence chrF < {args.wrong_below:g}); the page's threshold is {MIN_TOKEN_PROB}")
    print("| threshold | warned | precision | recall |\n|---:|---:|---:|---:|")
    for threshold in THRESHOLDS:
        warned = [w for p, w in zip(probs, wrong, strict=True) if p < threshold]
        precision = sum(warned) / max(1, len(warned))
        print(f"| {threshold} | {len(warned)} | {precision:.2f} | {sum(warned) / max(1, n_wrong):.2f} |")
    if args.write:
        doubt = doubt_of(probs, wrong, f"{len(probs):,} dev translations, written and typed")
        (args.model / DOUBT_FILE).write_text(doubt.to_json() + "\n", encoding="utf-8")
        print(f"wrote {args.model / DOUBT_FILE}")
    return 0
