"""Score translations with sacrebleu (BLEU, chrF); ``python -m training.evaluate`` scores a model on a test set."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import sacrebleu

from data.corpus import MAX_PAIRS_FILE_BYTES
from data.noise import TYPED_DESCRIPTION, typed
from data.readers import CorpusError, Pair, read_tsv
from model.bounded_read import read_text
from model.weights import ModelLoadError
from training.distributed import resolve_device
from training.outputs import OutputError, check_file
from translate.cli import add_decode_arguments, decode_options
from translate.translator import DecodeOptions, Translator

LOOP = re.compile(r"\b(\w+)(?:\W+\1\b){3,}", re.IGNORECASE)  # a word four or more times in a row


class EvaluationError(ValueError):
    """Bad evaluation input (missing or misaligned files); the message names the files."""


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict[str, Any]:
    """Corpus BLEU and chrF (one reference per sentence) with their sacrebleu signatures."""
    if len(hypotheses) != len(references):
        raise EvaluationError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    b, c = bleu.corpus_score(hypotheses, [references]), chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": round(b.score, 2),
        "chrf": round(c.score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "sentences": len(references),
        "hyp_ref_len_ratio": round(b.sys_len / max(1, b.ref_len), 3),
    }


def loops(texts: list[str]) -> int:
    """How many outputs repeat a word four or more times in a row (a decoder stuck in a loop)."""
    return sum(LOOP.search(text) is not None for text in texts)


def score(
    translator: Translator,
    pairs: list[Pair],
    options: DecodeOptions | None = None,
    progress: bool = False,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Translate ``pairs`` (greedy unless ``options`` say otherwise) and score them; adds speed and hypotheses, and
    ``truncated_lines``: 1-based lines whose input or output was cut at a length limit. The model is put back in the
    mode it was in (training calls this on the model it trains)."""
    was_training = translator.model.training
    start = time.perf_counter()
    texts = [p.src for p in pairs]
    results = translator.translate_all(texts, options or DecodeOptions(), batch_size=batch_size, progress=progress)
    seconds = time.perf_counter() - start
    translator.model.train(was_training)
    hyps = [r.text for r in results]
    result = corpus_scores(hyps, [p.tgt for p in pairs])
    return {
        **result,
        "seconds": round(seconds, 3),
        "sentences_per_s": round(len(pairs) / max(seconds, 1e-9), 1),
        "truncated_lines": [i + 1 for i, r in enumerate(results) if r.truncated or r.best.truncated],
        "hypotheses": hyps,
    }


def test_scores(translator: Translator, pairs: list[Pair], progress: bool = False) -> tuple[dict[str, Any], list[str]]:
    """A model's test split scored greedy, as written and typed: the ``test_greedy`` and ``test_greedy_typed``
    entries of a run's result file (``metrics.json``), and the hypotheses as written."""
    as_written = score(translator, pairs, progress=progress)
    hyps = as_written.pop("hypotheses")
    as_typed = score(translator, typed_pairs(pairs), progress=progress)
    as_typed.pop("hypotheses")
    return {"test_greedy": as_written, "test_greedy_typed": as_typed}, hyps


def typed_pairs(pairs: list[Pair]) -> list[Pair]:
    """The same test set with each source as people type it (data/noise.py ``typed``); references unchanged."""
    return [Pair(typed(p.src), p.tgt) for p in pairs]


def read_test_set(src: Path | None, ref: Path | None, pairs: Path | None) -> list[Pair]:
    """One ``--pairs`` TSV (source<TAB>reference), else line-aligned ``--src``/``--ref`` files (``parse_args`` checks
    that one or the other is given)."""
    if pairs is not None:
        try:
            return read_tsv(pairs)
        except CorpusError as err:
            raise EvaluationError(str(err)) from None
    sources, references = (read_text(p, MAX_PAIRS_FILE_BYTES, EvaluationError).splitlines() for p in (src, ref))
    if len(sources) != len(references):
        raise EvaluationError(
            f"{src} has {len(sources)} lines but {ref} has {len(references)}: source and reference must be line-aligned"
        )
    if not sources:
        raise EvaluationError(f"{src}: file is empty")
    return [Pair(s, r) for s, r in zip(sources, references, strict=True)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description="Translate a test set and score it with sacrebleu BLEU and chrF.",
    )
    parser.add_argument("--model", type=Path, required=True, help="model (or run) directory")
    parser.add_argument("--src", type=Path, help="source sentences, one per line")
    parser.add_argument("--ref", type=Path, help="reference translations, line-aligned with --src")
    parser.add_argument("--pairs", type=Path, help="instead of --src/--ref: a source<TAB>reference file")
    add_decode_arguments(parser)
    parser.add_argument("--device", default="auto", help="auto (CUDA > MPS > CPU), cpu, cuda, ...")
    parser.add_argument("--hyp", type=Path, help="write the translations here, one per line")
    parser.add_argument("--json", type=Path, help="write a JSON report (scores, signatures, speed) here")
    parser.add_argument(
        "--no-typed",
        action="store_true",
        help=f"skip the second pass on the sources as people type them ({TYPED_DESCRIPTION})",
    )
    args = parser.parse_args(argv)
    pairs_mode, files_mode = args.pairs is not None, args.src is not None and args.ref is not None
    if pairs_mode == files_mode or (pairs_mode and (args.src or args.ref)):
        parser.error("give either --src FILE and --ref FILE, or --pairs FILE")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    options = decode_options(args)
    try:
        device = str(resolve_device(args.device))  # one this machine lacks: refused before the test set is read
        pairs = read_test_set(args.src, args.ref, args.pairs)
        translator = Translator.load(args.model, device)
        for option, path in (("--hyp", args.hyp), ("--json", args.json)):
            if path is not None:
                check_file(path, option)  # before the work: a report is never lost after it
    except (EvaluationError, ModelLoadError, OutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    variants = {"as written": pairs} if args.no_typed else {"as written": pairs, "typed": typed_pairs(pairs)}
    results = {
        name: score(translator, v, options, progress=True, batch_size=args.batch_size) for name, v in variants.items()
    }
    print(f"{len(pairs)} sentences, beam {args.beam}")
    print(f"| {'source':<10} | BLEU  | chrF  | hyp/ref length | sentences/s | outputs cut |")
    for name, r in results.items():
        print(
            f"| {name:<10} | {r['bleu']:5.2f} | {r['chrf']:5.2f} | {r['hyp_ref_len_ratio']:14.3f} "
            f"| {r['sentences_per_s']:11.1f} | {len(r['truncated_lines']):11d} |"
        )
    result = results["as written"]
    print(f"BLEU {result['bleu']:.2f}  {result['bleu_signature']}")
    print(f"chrF {result['chrf']:.2f}  {result['chrf_signature']}")
    if result["truncated_lines"]:
        shown = ", ".join(map(str, result["truncated_lines"][:10]))
        print(f"warning: {len(result['truncated_lines'])} outputs cut at the length limit (lines {shown}…)")
    hyps = result.pop("hypotheses")
    if args.hyp:
        args.hyp.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    if args.json:
        report = {
            **result,  # the test set as written, at the top level
            "model": str(args.model),
            "src": str(args.pairs or args.src),
            "ref": str(args.pairs or args.ref),
            "beam_size": args.beam,
            "length_penalty": args.length_penalty,
            "batch_size": args.batch_size,
            "device": str(translator.device),
        }
        if "typed" in results:
            report["typed"] = {k: v for k, v in results["typed"].items() if k != "hypotheses"}
            report["typed"]["transform"] = f"data.noise.typed: {TYPED_DESCRIPTION}"
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
