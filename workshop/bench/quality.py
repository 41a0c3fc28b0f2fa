"""Translation quality against a real system, on the same held-out sentences, in one run.

Regenerates the model's test split from its own ``train_config.json`` (checked against the fingerprint in
``data_report.json``), translates it with the model (greedy and beam search) and, when installed, with
Apertium (``apt-get install apertium apertium-eng-spa``; this script installs nothing), and prints
sacrebleu BLEU / chrF and sentences/s side by side: once with the sources as written and once as people
type them (``data.noise.typed``: lowercase, no accents, no ¿¡, no commas, no final punctuation). Then the everyday
phrase list (``data/everyday-es-en.tsv``), scored by exact match.

    python -m workshop bench quality                                   # shipped model, greedy + beam 4, Apertium
    python -m workshop bench quality --model runs/my-run --beams 1 --limit 500
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path

import sacrebleu

from data.corpus import CorpusError, Pair, ReadReport
from data.noise import TYPED_DESCRIPTION, typed
from model.bounded_read import quoted
from model.run_dir import DATA_REPORT_FILE, TRAIN_CONFIG_FILE
from training.phrases import read_phrases, score_phrases
from training.prepare import load_and_split, model_split, split_fingerprint
from training.train_config import read_saved_config
from translate.cli import MAX_BEAM, refuse_unless
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop.bench import apertium
from workshop.bounds import MAX_SENTENCES, use_threads, within
from workshop.everyday import everyday_list


def test_pairs(model_dir: Path, corpus: str | None) -> list[Pair]:
    """The model's held-out test split, rebuilt from the corpus and verified against its fingerprint (``--corpus``:
    another copy of the corpus file)."""
    if corpus is not None:
        config = read_saved_config(model_dir / TRAIN_CONFIG_FILE)
        test = load_and_split(dataclasses.replace(config.data, corpora=(corpus,)), ReadReport()).test
        expected = json.loads((model_dir / DATA_REPORT_FILE).read_text()).get("sha256", {}).get("test")
        if expected and split_fingerprint(test) != expected:
            raise SystemExit(f"error: the test split made from {corpus} does not match {model_dir}/data_report.json")
        return test
    try:
        return model_split(model_dir).test
    except CorpusError as err:
        raise SystemExit(f"error: {err}") from None


def score_rows(systems: dict[str, tuple[list[str], float]], refs: list[str]) -> list[dict]:
    """BLEU, chrF, length ratio and speed of each system's hypotheses, with sacrebleu's signatures (a metric has
    one only once it has scored)."""
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    rows = []
    for name, (hyps, seconds) in systems.items():
        b, c = bleu.corpus_score(hyps, [refs]), chrf.corpus_score(hyps, [refs])
        rows.append(
            {
                "system": name,
                "bleu": round(b.score, 1),
                "chrf": round(c.score, 1),
                "sentences_per_s": round(len(hyps) / seconds, 1),
                "len_ratio": round(b.sys_len / b.ref_len, 3),
                "bleu_signature": str(bleu.get_signature()),
                "chrf_signature": str(chrf.get_signature()),
            }
        )
    return rows


def translate_systems(translator: Translator, sources: list[str], beams: list[int]) -> dict:
    """Each beam size of the model, then Apertium when installed: name -> (hypotheses, seconds)."""
    systems: dict[str, tuple[list[str], float]] = {}
    for beam in beams:
        start = time.perf_counter()
        hyps = translator.translate_many(sources, DecodeOptions(beam_size=beam), progress=True)
        systems[f"this model, {'greedy' if beam == 1 else f'beam {beam}'}"] = (hyps, time.perf_counter() - start)
    start = time.perf_counter()
    apertium_hyps = apertium.translate(sources)
    if apertium_hyps is not None:
        systems["Apertium spa-eng"] = (apertium_hyps, time.perf_counter() - start)
    return systems


def beam_sizes(text: str) -> list[int]:
    """``--beams``: whole numbers separated by commas (each then bounded), or exit 2 in one line."""
    sizes = [part.strip() for part in text.split(",")]
    fits = all(size.removeprefix("-").isdigit() for size in sizes)
    refuse_unless(fits, f"--beams {quoted(text)}: expected beam sizes separated by commas, each 1 to {MAX_BEAM}")
    return [int(size) for size in sizes]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--corpus", default=None, help="corpus path if it moved since training")
    parser.add_argument("--beams", default="1,4", help="beam sizes to evaluate (1 = greedy)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N test sentences (0 = all)")
    parser.add_argument(
        "--phrases", type=Path, default=everyday_list(DEFAULT_MODEL), help="phrase list scored by exact match"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the table as JSON here")
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    beams = [within("--beams", beam, 1, MAX_BEAM, "(1 = greedy)") for beam in beam_sizes(args.beams)]
    within("--limit", args.limit, 0, MAX_SENTENCES, "sentences (0 = all)")
    use_threads(args.threads)
    pairs = test_pairs(args.model, args.corpus)
    if args.limit:
        pairs = pairs[: args.limit]
    refs = [p.tgt for p in pairs]
    translator = Translator.load(args.model)
    written = score_rows(translate_systems(translator, [p.src for p in pairs], beams), refs)
    as_typed = score_rows(translate_systems(translator, [typed(p.src) for p in pairs], beams), refs)
    print(f"\n{len(pairs)} test sentences of {args.model} (held out from training); typed = {TYPED_DESCRIPTION}")
    print("| system | BLEU | chrF | typed BLEU | typed chrF | hyp/ref length (typed) | sentences/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for w, t in zip(written, as_typed, strict=True):
        print(
            f"| {w['system']} | {w['bleu']} | {w['chrf']} | {t['bleu']} | {t['chrf']} "
            f"| {w['len_ratio']} ({t['len_ratio']}) | {w['sentences_per_s']} |"
        )
    print(f"\nBLEU: {written[0]['bleu_signature']}\nchrF: {written[0]['chrf_signature']}")
    if shutil.which("apertium") is None:
        print("Apertium not installed (apt-get install apertium apertium-eng-spa): comparison skipped")
    phrases = score_phrases(translator, read_phrases(args.phrases))
    print(f"\neveryday phrases ({args.phrases}): {phrases['accepted']}/{phrases['phrases']} accepted, greedy")
    for row in phrases["rows"]:
        if not row["accepted"]:
            print(f"  not accepted: {row['source']!r} -> {row['translation']!r}")
    if args.json:
        report = {
            "sentences": len(pairs),
            "rows": written,
            "typed_rows": as_typed,
            "everyday": phrases,
            "bleu_signature": written[0]["bleu_signature"],
            "chrf_signature": written[0]["chrf_signature"],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
