"""``python -m workshop behaviour --model DIR``: the lab's behaviour tests (CheckList: names, numbers, pronouns, the
typed form, negation, plurals; ``lab/behaviour``) run on a model, one row per test, the figures of its model card:
the system (the model under its name guard) and the model alone, and apart the cases the guard read alike.

The Behaviour tests tab of the Translate page runs the same tests; this command prints them for a model's card.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lab.behaviour.cases import CASES, SEED
from lab.behaviour.runner import TestResult, model_translate, run
from translate.translator import DEFAULT_MODEL, Translator
from workshop.bounds import use_threads

HEAD = ("test", "kind", "cases", "system", "read alike", "system, read apart", "model alone", "a failing case")


def table(results: list[TestResult]) -> str:
    """Per test: kind, cases, the system's passes, the cases the guard read alike, the system's passes among the
    others (of how many), the model alone's passes, and one case the system fails (both sentences, their
    translations and why)."""
    rows = [HEAD]
    for r in results:
        example = ""
        if failed := [o for o in r.outcomes if not o.verdict.passed]:
            (english, changed), why = failed[0].translations, failed[0].verdict.reason
            example = f"{failed[0].case.original} → {english} | {failed[0].case.changed} → {changed} ({why})"
        apart = f"{r.passed_read_apart}/{len(r.outcomes) - r.read_alike}"
        figures = (str(r.passed), str(r.read_alike), apart, str(r.passed_alone))
        rows.append((r.test.name, r.test.kind, str(len(r.outcomes)), *figures, example))
    last = len(HEAD) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[last]]) for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop behaviour", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model or run directory")
    parser.add_argument("--seed", type=int, default=SEED, help="the draw of the cases")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the app's LAB_THREADS: 1)")
    args = parser.parse_args(argv)
    use_threads(args.threads, default=False)
    translator = Translator.load(args.model)
    start = time.perf_counter()
    results = run(model_translate(translator), seed=args.seed)
    seconds = time.perf_counter() - start
    print(table(results))
    cases = sum(len(r.outcomes) for r in results)
    system = "the model under its name guard" if translator.guard is not None else "the model (it has no name guard)"
    print(
        f"\n{args.model}, greedy: {cases} cases ({CASES} a test, seed {args.seed}) in {seconds:.1f} s; system: {system}"
    )
    return 0
