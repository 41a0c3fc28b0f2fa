"""How well the page's "unsure" warning finds wrong translations: precision and recall per threshold, on dev.

The page warns when a translation's geometric-mean probability per output token is below
``lab.page.language_check.MIN_TOKEN_PROB``. Here every sentence of the model's dev split is translated greedy,
as written and as typed; a translation counts as wrong when its sentence chrF against the reference is below
``--wrong-below``; each threshold's precision (warned and wrong / warned) and recall (warned and wrong / wrong)
are printed side by side.

    python -m workshop bench uncertainty --model checkpoints/es-en [--write]

It also measures the page's far-from-training sign (lab/page/unfamiliar.py) on the dev split as written and on
``--far``, sentences unlike the corpus written for this lab with their references (far-es-en.tsv beside this file:
40 news, formal, legal and technical sentences, never trained on): the share of each flagged, and
the model's chrF on each. ``--write`` keeps the page's threshold's figures and the far sign's in the model folder
(``model.run_dir.DOUBT_FILE``): the page then quotes this model's own figures, not another model's.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import sacrebleu

from data.corpus import Pair, read_pairs_file
from data.noise import typed
from lab.page.language_check import MIN_TOKEN_PROB, WRONG_BELOW, doubt_of, token_prob
from lab.page.unfamiliar import FarFigures, loop, reading
from model.run_dir import DOUBT_FILE
from training.prepare import model_split
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop.bounds import within

FAR = Path(__file__).with_name("far-es-en.tsv")  # Spanish<TAB>English; read the other way round for English → Spanish
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop bench uncertainty", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--wrong-below", type=float, default=WRONG_BELOW, help="sentence chrF under which it is wrong")
    parser.add_argument("--far", type=Path, help="source<TAB>reference lines unlike the corpus (default: by language)")
    parser.add_argument("--write", action="store_true", help=f"write the page's threshold's figures to {DOUBT_FILE}")
    args = parser.parse_args(argv)
    within("--wrong-below", args.wrong_below, 0, 100, "chrF")
    dev = model_split(args.model).dev
    translator, chrf = Translator.load(args.model), sacrebleu.metrics.CHRF()
    probs, wrong, written = [], [], []
    for sources in ([p.src for p in dev], [typed(p.src) for p in dev]):
        results = translator.translate_all(sources, DecodeOptions(), batch_size=64)
        written = written or results
        for t, pair in zip(results, dev, strict=True):
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
    far = far_figures(translator, dev, written, args.far or FAR)
    if args.write:
        doubt = doubt_of(probs, wrong, f"{len(probs):,} dev translations, written and typed")
        doubt = replace(doubt, far=far)
        (args.model / DOUBT_FILE).write_text(doubt.to_json() + "\n", encoding="utf-8")
        print(f"wrote {args.model / DOUBT_FILE}")
    return 0


def far_figures(translator: Translator, dev: list, written: list, far_file: Path | None) -> FarFigures | None:
    """The far sign on the dev split (its translations as written) and on ``far_file``, printed side by side; None
    when the model has no guard (no corpus counts). The far list is read the other way round for an English source."""
    if translator.guard is None or far_file is None:
        print("far sign: not measured (the model has no name guard: no corpus counts)")
        return None
    pairs = read_pairs_file(far_file)
    if far_file == FAR and translator.guard.lang == "en":  # the same sentences, English → Spanish
        pairs = [Pair(p.tgt, p.src) for p in pairs]
    far = translator.translate_all([p.src for p in pairs], DecodeOptions(), batch_size=32)
    chrf = sacrebleu.metrics.CHRF()
    rows = []
    for name, sources, results in (("dev", dev, written), (str(far_file), pairs, far)):
        flagged = sum(reading([t], translator.guard).far for t in results) / len(results)
        looping = sum(bool(loop(t.text)) for t in results)
        score = chrf.corpus_score([t.text for t in results], [[p.tgt for p in sources]]).score
        rows.append((flagged, score))
        print(
            f"| {name} | {len(results)} | {flagged:.1%} flagged far | chrF {score:.1f} | {looping} repeat themselves |"
        )
    (flagged_dev, chrf_dev), (flagged_far, chrf_far) = rows
    return FarFigures(round(flagged_dev, 3), round(flagged_far, 3), round(chrf_dev, 1), round(chrf_far, 1), len(pairs))
