"""``python -m workshop gate --candidate DIR``: may a model replace the shipped one? A regression gate.

The candidate and the baseline (the shipped model unless told otherwise) translate the same dev split, as written
and as people type it, the everyday phrase list and a short list of canary sentences; the candidate passes when

- its dev BLEU, as written and typed, is at most ``tolerance`` below the baseline's;
- it gets at least as many everyday phrases right as the baseline less ``everyday_slack`` overall (one phrase of 70:
  a count near 60 moves by ~2.9 by chance), and at least as many among the phrases its own training data does not
  hold (what it had to generalise to: a list it trained on proves little);
- it gets every canary right ("Hola mundo" and other sentences any usable model translates), but for one the
  shipped model misses too (a known miss in its model card: en-es's "Hello world");
- it carries as many unseen names, places and numbers as the baseline, as written and typed, but for at most
  ``names_slack`` of them (workshop/copy_check.py: 1 % of its 400 items, under the count's own sampling noise);
- it loops (a word four or more times in a row) on at most ``max_extra_loops`` more dev sentences than the baseline.

Both must be scored on the same dev pairs: a candidate whose dev split differs from the baseline's (by sha256) is
refused, as is one whose dev pairs its parent trained on (``data.pin_parent_split``). Exit status 0 = pass, 1 = fail,
2 = the gate could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Container
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from data.corpus import CorpusError, Pair
from model.bounded_read import real
from model.run_dir import CONFIG_FILE, DATA_REPORT_FILE
from model.weights import ModelLoadError
from training.evaluate import loops, score, typed_pairs
from training.outputs import OutputError, check_file
from training.phrases import Phrase, canary_list, read_phrases, score_phrases
from training.prepare import model_split, split_fingerprint
from training.reference_points import direction_of
from translate.settings import REPO_ROOT
from translate.translator import Candidate, DecodeOptions, Translation, Translator
from workshop.copy_check import CopyItem, copy_items
from workshop.copy_check import check as copy_check
from workshop.everyday import everyday_list, mark_seen, training_sources


class GateError(ValueError):
    """The gate cannot compare the two models (different dev splits, missing data); the message says why."""


@dataclass(frozen=True)
class GateRule:
    tolerance: float = 0.3  # BLEU the candidate may lose on dev, as written and typed
    max_extra_loops: int = 5  # dev outputs that loop, beyond the baseline's
    names_slack: int = 4  # unseen names the candidate may lose, per count (a count near 12 of 400 moves by ~3.4)
    everyday_slack: int = 1  # everyday phrases it may lose overall (from en-es v15 on: v13 and v14 lost one of 70)


@dataclass(frozen=True)
class Check:
    name: str
    candidate: float
    baseline: float
    passed: bool
    rule: str
    detail: tuple[str, ...] = ()  # the sentences behind a failing count: what the candidate said, and the baseline


NOT_IN_TRAINING = " [not in its training]"  # marks a phrase of the everyday list the candidate's training lacks


def lost(
    candidate: dict[str, object], baseline: dict[str, object], only: set[int] | None = None, new: Container[int] = ()
) -> tuple[str, ...]:
    """Each phrase the candidate gets wrong (among ``only``, the row indices, when given): its translation, and the
    baseline's when the baseline got it right ("Hola mundo" → "Hide world." (baseline: "Hi, world.")); the rows in
    ``new`` (not in the candidate's training) are marked so."""
    lines = []
    for i, (c, b) in enumerate(zip(candidate["rows"], baseline["rows"], strict=True)):
        if c["accepted"] or (only is not None and i not in only):
            continue
        was = f' (baseline: "{b["translation"]}")' if b["accepted"] else " (baseline wrong too)"
        lines.append(f'"{c["source"]}" → "{c["translation"]}"{was}{NOT_IN_TRAINING if i in new else ""}')
    return tuple(lines)


def dev_pairs(candidate: Path, baseline: Path) -> list[Pair]:
    """The dev split both models are scored on: the candidate's, which must be the baseline's (by sha256)."""
    try:
        pairs = model_split(candidate).dev
    except CorpusError as err:
        raise GateError(f"{candidate}: cannot have its dev split ({err})") from None
    expected = _dev_sha256(baseline)
    if expected is not None and split_fingerprint(pairs) != expected:
        raise GateError(
            f"{candidate}'s dev split is not {baseline}'s (sha256 differs): the scores would not be comparable. "
            f"Train the candidate with --init-from {baseline} (its dev and test pairs are kept) or on the same split"
        )
    return pairs


def _dev_sha256(model_dir: Path) -> str | None:
    path = model_dir / DATA_REPORT_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8")).get("sha256", {}).get("dev")


@dataclass(frozen=True)
class GateLists:
    phrases: list[Phrase]  # the everyday list
    canaries: list[Phrase]
    seen: set[str] | None  # typed_key of the candidate's training sources (None: unknown)
    copy: list[CopyItem] = field(default_factory=list)  # the copy check's sentences (workshop/copy_check.py)


def gate(
    candidate: Translator, baseline: Translator, dev: list[Pair], lists: GateLists, rule: GateRule = GateRule()
) -> list[Check]:
    """Every check of the gate, candidate beside baseline."""
    pair = (candidate, baseline)
    return (
        dev_checks(pair, dev, rule)
        + phrase_checks(pair, lists, rule.everyday_slack)
        + copy_checks(pair, lists.copy, rule.names_slack)
    )


def dev_checks(models: tuple[Translator, Translator], dev: list[Pair], rule: GateRule) -> list[Check]:
    """Dev BLEU as written and typed, within ``rule.tolerance`` of the baseline's, and the outputs that loop."""
    checks = []
    for name, pairs in (("dev BLEU as written", dev), ("dev BLEU typed", typed_pairs(dev))):
        c, b = (score(t, pairs) for t in models)
        ok = c["bleu"] >= b["bleu"] - rule.tolerance
        checks.append(Check(name, c["bleu"], b["bleu"], ok, f">= baseline - {rule.tolerance}"))
        if name == "dev BLEU as written":
            c_loops, b_loops = loops(c["hypotheses"]), loops(b["hypotheses"])
            ok = c_loops <= b_loops + rule.max_extra_loops
            checks.append(Check("dev outputs that loop", c_loops, b_loops, ok, f"<= baseline + {rule.max_extra_loops}"))
    return checks


def phrase_checks(models: tuple[Translator, Translator], lists: GateLists, slack: int = 0) -> list[Check]:
    """The everyday list (overall and on the phrases the candidate's training lacks) and every canary."""
    c_rows, b_rows = (score_phrases(t, lists.phrases) for t in models)
    seen = lists.seen
    new = set() if seen is None else {i for i, row in enumerate(mark_seen(c_rows, seen)["rows"]) if not row["seen"]}
    overall = c_rows["accepted"] >= b_rows["accepted"] - slack
    wrong = lost(c_rows, b_rows, new=new)
    rule = f">= baseline - {slack}" if slack else ">= baseline"
    checks = [Check("everyday phrases right", c_rows["accepted"], b_rows["accepted"], overall, rule, wrong)]
    if seen is not None:
        c_new = sum(c_rows["rows"][i]["accepted"] for i in new)
        b_new = sum(b_rows["rows"][i]["accepted"] for i in new)
        # When the overall check fails too, its list holds these phrases already, marked: none is named twice.
        wrong = () if not overall else lost(c_rows, b_rows, new)
        name = f"everyday phrases not in its training ({len(new)}) right"
        checks.append(Check(name, c_new, b_new, c_new >= b_new, ">= baseline", wrong))
    c_can, b_can = (score_phrases(t, lists.canaries) for t in models)
    n = len(lists.canaries)
    # A canary the shipped model misses too (a known miss of its model card) does not refuse a candidate of that
    # direction; against the copy floor, every canary counts.
    misses = [b["accepted"] for c, b in zip(c_can["rows"], b_can["rows"], strict=True) if not c["accepted"]]
    every = b_can["accepted"] == n or isinstance(models[1], SourceCopy)
    ok = not misses or (not every and not any(misses))
    rule = f"all {n}" if every else "all the baseline gets right"
    checks.append(Check("canaries right", c_can["accepted"], b_can["accepted"], ok, rule, lost(c_can, b_can)))
    return checks


def copy_checks(models: tuple[Translator, Translator], items: list[CopyItem], slack: int) -> list[Check]:
    """Unseen names and numbers kept (workshop/copy_check.py), as written and typed, by the model alone and under
    its name guard: the baseline's less ``slack`` at most (copying the source, which keeps them all, is no baseline
    here)."""
    if not items or isinstance(models[1], SourceCopy):
        return []
    checks = []
    for guarded, who in ((False, "the model alone"), (True, "with the name guard")):
        c_copy, b_copy = (copy_check(t, items, name_guard=guarded) for t in models)
        for form in ("written", "typed"):
            c, b = c_copy[form]["kept"], b_copy[form]["kept"]
            name = f"unseen names and numbers kept, {form}, {who} ({len(items)})"
            rule = f">= baseline - {slack}"
            checks.append(Check(name, c, b, c >= b - slack, rule, tuple(c_copy[form]["misses"][:10])))
    return checks


class SourceCopy(Translator):
    """The copy floor: gives back every source unchanged. The baseline of a direction the lab has no model of."""

    def __init__(self) -> None:
        self.model, self.guard = torch.nn.Module(), None

    def decode_batch(self, texts: list[str], options: DecodeOptions | None = None) -> list[Translation]:
        return [Translation(t, [], False, [Candidate([], 0.0, 0.0, text=t)]) for t in texts]


def shipped_of(model_dir: Path) -> Path | None:
    """The shipped model of ``model_dir``'s direction (``checkpoints/SRC-TGT``), None when the lab has none."""
    direction = direction_of(model_dir)
    shipped = REPO_ROOT / "checkpoints" / "-".join(direction) if direction else None
    return shipped if shipped is not None and (shipped / CONFIG_FILE).is_file() else None


def direction_lists(model_dir: Path) -> tuple[Path, Path]:
    """The everyday list and the canaries of ``model_dir``'s direction (``data/everyday-SRC-TGT.tsv``)."""
    src, tgt = direction_of(model_dir) or ("es", "en")
    canaries = canary_list(src, tgt)
    if canaries is None:
        raise GateError(f"the lab has no canaries for {src}-{tgt} (data/canaries-{src}-{tgt}.tsv)")
    return everyday_list(model_dir), canaries


def run_gate(candidate_dir: Path, baseline_dir: Path | None = None, rule: GateRule = GateRule()) -> list[Check]:
    """Load both models and the lists of the candidate's direction, then ``gate``; the baseline is that direction's
    shipped model unless given, or the copy floor when there is none. Raises GateError or ModelLoadError when it
    cannot run."""
    baseline_dir = baseline_dir or shipped_of(candidate_dir)
    if baseline_dir is not None and real(candidate_dir) == real(baseline_dir):
        raise GateError(f"{candidate_dir} is the baseline itself")
    dev = dev_pairs(candidate_dir, baseline_dir) if baseline_dir is not None else model_split(candidate_dir).dev
    candidate = Translator.load(candidate_dir)
    baseline = Translator.load(baseline_dir) if baseline_dir is not None else SourceCopy()
    split = model_split(candidate_dir)
    copy = copy_items(split.dev, split.train)
    everyday, canaries = direction_lists(candidate_dir)
    lists = GateLists(read_phrases(everyday), read_phrases(canaries), training_sources(candidate_dir), copy)
    return gate(candidate, baseline, dev, lists, rule)


def report(checks: list[Check]) -> str:
    """The checks as a table, then, under each failing check, the sentences behind it, then PASS or FAIL."""
    rows = [
        f"| {c.name} | {c.candidate:g} | {c.baseline:g} | {c.rule} | {'pass' if c.passed else 'FAIL'} |" for c in checks
    ]
    wrong = [line for c in checks if not c.passed and c.detail for line in (f"{c.name}, wrong:", *c.detail)]
    verdict = "PASS" if all(c.passed for c in checks) else "FAIL"
    table = ["| check | candidate | baseline | rule | |", "|---|---:|---:|---|---|", *rows]
    return "\n".join([*table, *(["", *wrong, ""] if wrong else []), verdict])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop gate", description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", type=Path, required=True, help="model (or run) directory to judge")
    parser.add_argument(
        "--baseline", type=Path, help="default: the shipped model of the candidate's direction, else copying the source"
    )
    parser.add_argument("--tolerance", type=float, default=GateRule.tolerance, help="dev BLEU the candidate may lose")
    parser.add_argument("--json", type=Path, help="write the checks here")
    args = parser.parse_args(argv)
    if not 0 <= args.tolerance <= 100:  # nan included: it would fail every BLEU check without saying why
        print(f"error: --tolerance {args.tolerance}: expected BLEU points from 0 to 100", file=sys.stderr)
        return 2
    try:
        if args.json is not None:
            check_file(args.json, "--json")  # before the gate runs: its verdict is never lost after it
        checks = run_gate(args.candidate, args.baseline, GateRule(tolerance=args.tolerance))
    except (GateError, ModelLoadError, OutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"candidate {args.candidate} against baseline {args.baseline or shipped_of(args.candidate) or 'copy the source'}"
    )
    print(report(checks))
    if args.json:
        passed = all(c.passed for c in checks)
        data = {
            "candidate": str(args.candidate),
            "baseline": str(args.baseline),
            "passed": passed,
            "checks": [asdict(c) for c in checks],
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0 if all(c.passed for c in checks) else 1
