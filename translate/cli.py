"""``python -m translate``: translate arguments or standard input with a model directory."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import replace
from itertools import islice
from pathlib import Path

from model.weights import ModelLoadError
from translate.name_guard import MarkError, unmarked
from translate.translator import DEFAULT_MODEL, KEEP_HELP, UNRESTORED, DecodeOptions, Translation, Translator

CHUNK_LINES = 2000  # standard input is read, translated and written this many lines at a time
MAX_BEAM, MAX_BATCH, MAX_PENALTY = 64, 4096, 10.0  # the bounds of a command line's decoding options


def add_decode_arguments(parser: argparse.ArgumentParser, beam: int = 1, n_best: bool = False) -> None:
    """``--beam``, ``--length-penalty``, ``--batch-size`` (and ``--n-best``): every command line that translates."""
    parser.add_argument("--beam", type=int, default=beam, help=f"beam size, 1 (greedy) to {MAX_BEAM}")
    parser.add_argument("--length-penalty", type=float, default=1.0, help=f"beam length penalty, 0 to {MAX_PENALTY:g}")
    if n_best:
        parser.add_argument("--n-best", type=int, default=1, help="print the n best hypotheses (at most --beam)")
    parser.add_argument("--batch-size", type=int, default=64, help=f"sentences decoded at once, 1 to {MAX_BATCH}")
    parser.add_argument(
        "--no-name-guard", action="store_true", help="translate names, places and numbers as the model alone does"
    )


def refuse_unless(fits: bool, refusal: str) -> None:
    """Exit with status 2 and one line, ``error: {refusal}`` (the option, its value, what it takes), unless ``fits``:
    every command line's options are refused out of bounds, never clamped."""
    if not fits:
        print(f"error: {refusal}", file=sys.stderr)
        raise SystemExit(2)


def decode_options(args: argparse.Namespace) -> DecodeOptions:
    """The options of ``add_decode_arguments`` (or the ones a command has: ``--beam`` alone), checked."""
    beam, n_best = args.beam, getattr(args, "n_best", 1)
    penalty, batch = getattr(args, "length_penalty", 1.0), getattr(args, "batch_size", 1)
    refuse_unless(1 <= beam <= MAX_BEAM, f"--beam {beam}: expected 1 (greedy) to {MAX_BEAM}")
    refuse_unless(1 <= n_best <= beam, f"--n-best {n_best}: expected 1 to the beam size ({beam})")
    refuse_unless(
        0 <= penalty <= MAX_PENALTY, f"--length-penalty {penalty}: expected a number from 0 to {MAX_PENALTY:g}"
    )
    refuse_unless(1 <= batch <= MAX_BATCH, f"--batch-size {batch}: expected 1 to {MAX_BATCH}")
    return DecodeOptions(beam, penalty, n_best, name_guard=not getattr(args, "no_name_guard", False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m translate",
        description="Translate with a model directory (the shipped one: Spanish to English). Standard input is "
        f"translated in batches of {CHUNK_LINES} lines sorted by length, one output line per input line, in order; "
        f"a long line is translated sentence by sentence, as the app does. {KEEP_HELP[:-1]}: "
        "'[[Rosa]] es mi hermana.' gives 'Rosa is my sister.'.",
    )
    parser.add_argument("text", nargs="*", help="sentences to translate (default: read standard input line by line)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help=f"model directory (default: {DEFAULT_MODEL})")
    add_decode_arguments(parser, n_best=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    options = replace(decode_options(args), marks=True)
    try:
        translator = Translator.load(args.model, args.device)
    except ModelLoadError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    lines = iter(args.text or stdin_lines())
    number = 0
    for chunk in iter(lambda: list(islice(lines, CHUNK_LINES)), []):  # until a chunk comes back empty
        for n, line in enumerate(chunk, number + 1):
            try:
                unmarked(line)
            except MarkError as err:
                refuse_unless(False, f"line {n}: {err}")
        for line, results in zip(chunk, translate_lines(translator, chunk, options, args.batch_size), strict=True):
            number += 1
            _warn(translator, number, line, results)
            if options.n_best > 1 and results:
                for c in results[0].candidates:
                    print(f"{c.score:.4f}\t{c.log_prob:.4f}\t{c.text}")
            else:
                print(" ".join(r.text for r in results))
        sys.stdout.flush()
    return 0


def stdin_lines() -> Iterator[str]:
    """Standard input's lines; bytes that are not UTF-8 end the command with one line saying where (status 2)."""
    done = 0
    try:
        for line in sys.stdin:
            line.encode("utf-8")  # bytes read as surrogates (a C locale's stdin) do not encode: found here
            done += 1
            yield line.rstrip("\n")
    except UnicodeError:
        refuse_unless(False, f"standard input: not UTF-8 text (line {done + 1} or the lines read with it)")


def translate_lines(
    translator: Translator, lines: list[str], options: DecodeOptions, batch_size: int = 64
) -> list[list[Translation]]:
    """Each line's translations, in order: one per piece (``Translator.pieces``; an n-best list keeps the line
    whole), none for a blank line. All pieces of all lines are decoded together, in length-sorted batches."""
    split = [[] if not line.strip() else [line] if options.n_best > 1 else translator.pieces(line) for line in lines]
    flat = iter(translator.translate_all([p for parts in split for p in parts], options, batch_size))
    return [list(islice(flat, len(parts))) for parts in split]


def _warn(translator: Translator, number: int, line: str, results: list[Translation]) -> None:
    """Notes on standard error for input line ``number``: characters left out, a source or an output cut short, what
    the name guard swapped."""
    where = f"line {number}: "
    left_out = translator.tokenizer.src_reading(unmarked(line)[0]).left_out if results else ()
    if left_out:
        print(f"note: {where}left out, not in the model's vocabulary: {' '.join(left_out)}", file=sys.stderr)
    if any(r.truncated for r in results):
        print(f"warning: {where}input cut to {translator.max_src_len} subwords", file=sys.stderr)
    if any(r.best.truncated for r in results):
        print(f"warning: {where}output cut at the length limit (the model had not finished)", file=sys.stderr)
    kept = " (kept as you asked)"
    swaps = [f"{s.original} → {s.stand_in}{kept * s.kept}" for r in results if r.guarded for s in r.guarded.swaps]
    if swaps:
        print(
            f"note: {where}name guard: read {', '.join(swaps)}, then put back (--no-name-guard: off)", file=sys.stderr
        )
    for note in {r.guard_note for r in results if r.guard_note}:
        print(f"note: {where}{note}", file=sys.stderr)
    if not_kept := [span for r in results for span in r.not_kept]:
        print(f"warning: {where}not kept as typed, as asked: {', '.join(not_kept)}", file=sys.stderr)
    if unrestored := sum(r.unrestored for r in results):
        print(f"note: {where}name guard: {unrestored} {UNRESTORED}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
