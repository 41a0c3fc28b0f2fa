"""``python -m workshop behaviour --model DIR``: the lab's behaviour tests (CheckList: names, numbers, pronouns, the
typed form, negation, plurals; ``lab/behaviour``) run on a model, one row per test, the figures of its model card.

The Behaviour tests tab of the Translate page runs the same tests; this command prints them for a model's card.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from lab.behaviour.cases import CASES, SEED
from lab.behaviour.runner import TestResult, model_translate, run
from translate.cli import refuse_unless
from translate.translator import DEFAULT_MODEL, Translator


def table(results: list[TestResult]) -> str:
    """Test, kind, cases, passed, rate and one failing case (both sentences, their translations and why)."""
    rows = [("test", "kind", "cases", "passed", "rate", "a failing case")]
    for r in results:
        example = ""
        if r.failures:
            first = r.failures[0]
            (english, changed), why = first.translations, first.verdict.reason
            example = f"{first.case.original} → {english} | {first.case.changed} → {changed} ({why})"
        rows.append((r.test.name, r.test.kind, str(len(r.outcomes)), str(r.passed), f"{100 * r.rate:.0f} %", example))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[5]]) for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop behaviour", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model or run directory")
    parser.add_argument("--no-name-guard", action="store_true", help="the model alone, without its name guard")
    parser.add_argument("--seed", type=int, default=SEED, help="the draw of the cases")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the app's LAB_THREADS: 1)")
    args = parser.parse_args(argv)
    refuse_unless(1 <= args.threads <= 256, f"--threads {args.threads}: expected 1 to 256")
    torch.set_num_threads(args.threads)
    translator = Translator.load(args.model)
    guard = translator.guard is not None and not args.no_name_guard
    start = time.perf_counter()
    results = run(model_translate(translator, guard), seed=args.seed)
    seconds = time.perf_counter() - start
    print(table(results))
    cases = sum(len(r.outcomes) for r in results)
    who = "under its name guard" if guard else "the model alone"
    print(f"\n{args.model}, {who}, greedy: {cases} cases ({CASES} a test, seed {args.seed}) in {seconds:.1f} s")
    return 0
