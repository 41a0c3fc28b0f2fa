"""How often the words of each shade of the page's word confidence are wrong, on the model's dev split.

Every dev sentence is translated as the page does by default (greedy, name guard on); each output word gets its
least sure piece's probability from the translation's record (``lab.page.output_words``) and counts as wrong when
it is not among the reference's words (lowercased, punctuation stripped: a bag of words). The guard's words and pure
punctuation are left out. The share of wrong words per shade is the page's legend.

    python -m workshop bench word_confidence --model checkpoints/es-en [--write]

``--write`` keeps the figures in the model folder (``model.run_dir.WORD_CONFIDENCE_FILE``), where the page reads them.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from lab.page.output_words import EDGES, Band, Calibration, OutputWord, output_words
from model.run_dir import WORD_CONFIDENCE_FILE
from training.prepare import model_split
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop.bounds import MAX_SENTENCES, within


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench word_confidence", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--limit", type=int, default=0, help="the first N dev pairs only (0: all)")
    parser.add_argument("--write", action="store_true", help=f"write the figures to {WORD_CONFIDENCE_FILE}")
    args = parser.parse_args(argv)
    within("--limit", args.limit, 0, MAX_SENTENCES, "pairs")
    dev = model_split(args.model).dev
    dev = dev[: args.limit] if args.limit else dev
    translator = Translator.load(args.model)
    results = translator.translate_all([p.src for p in dev], DecodeOptions(), batch_size=64, progress=True)
    words = [
        (word, pair.tgt)
        for t, pair in zip(results, dev, strict=True)
        for word in output_words(translator.tokenizer, t.best, t.guarded)
    ]
    calibration = calibrate(words, f"{len(dev):,} dev translations of {args.model.name}, greedy, name guard on")
    edges = (0.0, *EDGES, 1.0)
    print(f"{args.model}: {calibration.measured}; wrong = not among the reference's words")
    print("| probability | words | wrong | share |\n|---|---:|---:|---:|")
    for band in calibration.bands:
        share = band.wrong / max(1, band.words)
        print(f"| {edges[band.shade]:.2f}–{edges[band.shade + 1]:.2f} | {band.words} | {band.wrong} | {share:.2f} |")
    if args.write:
        (args.model / WORD_CONFIDENCE_FILE).write_text(calibration.to_json() + "\n", encoding="utf-8")
        print(f"wrote {args.model / WORD_CONFIDENCE_FILE}")
    return 0


def bag(text: str) -> set[str]:
    """The words of ``text`` as the calibration compares them: lowercased, punctuation stripped from both ends."""
    return {w for w in (plain_word(w) for w in text.split()) if w}


def plain_word(word: str) -> str:
    return word.lower().strip(".,;:!?¡¿\"'«»“”‘’()[]-…")


def calibrate(words: list[tuple[OutputWord, str]], measured: str) -> Calibration:
    """The share of wrong words per shade, from (word, its sentence's reference) pairs; the guard's words and pure
    punctuation are left out."""
    counts = [[0, 0] for _ in range(len(EDGES) + 1)]
    for word, reference in words:
        if word.stand_in or not plain_word(word.text) or math.isnan(word.prob):
            continue
        counts[word.shade][0] += 1
        counts[word.shade][1] += plain_word(word.text) not in bag(reference)
    return Calibration(tuple(Band(shade, n, wrong) for shade, (n, wrong) in enumerate(counts)), measured)
