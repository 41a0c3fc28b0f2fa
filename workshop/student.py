"""``python -m workshop student``: a training run that also learns from a teacher's translations.

Sequence-level distillation (Kim & Rush 2016); the teacher's file is ``python -m workshop distill``'s.

``python -m workshop student --distilled FILE [--mix both] TRAINING ARGS…`` is ``python -m training.train`` with its
training pairs changed after the split, before anything is written (``training.prepare.prepare_data``'s ``mix``):
``--mix distilled`` trains on the teacher's translations of the training sources, ``both`` on them and the
originals, ``original`` on the originals alone. Dev and test pairs are never changed; a source the teacher lacks, or
whose translation is a dev or test sentence, keeps its original pair (counted in the run's data report). Typing
noise still applies to the source. ``--resume`` continues a run as ``training.train`` does: its data is prepared.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from functools import partial
from pathlib import Path
from typing import Literal, get_args

from data.corpus import CorpusError, Pair, ReadReport, Split, match_key, read_pairs_file
from training.train import main as train

Mix = Literal["original", "distilled", "both"]


def mix_distilled(parts: Split, report: ReadReport, teacher: dict[str, str], mix: Mix) -> Split:
    """The split with the training pairs ``mix`` asks for (the module's docstring); dev and test as they are."""
    if mix == "original":
        return parts
    held = {match_key(p.tgt) for p in parts.dev + parts.test}
    distilled, kept = [], []
    for pair in parts.train:
        if (target := teacher.get(pair.src, "")) and match_key(target) not in held:
            distilled.append(Pair(pair.src, target, f"{pair.origin} (distilled)" if pair.origin else "distilled"))
            continue
        kept.append(pair)
        why = "distilled translation is a dev or test sentence" if target else "no translation in the distilled file"
        report.skip(f"{why} (original kept)", pair.origin or pair.src)
    originals = set(parts.train)  # a Pair's equality is its two sentences
    both = parts.train + [p for p in distilled if p not in originals]
    report.added[f"distilled pairs (workshop student, --mix {mix})"] += len(distilled)
    return dataclasses.replace(parts, train=distilled + kept if mix == "distilled" else both)


def train_student(argv: list[str], distilled: Path, mix: Mix = "both") -> int:
    """``training.train`` on ``argv``, its training pairs mixed with the teacher's translations in ``distilled``."""
    try:
        teacher = {p.src: p.tgt.strip() for p in read_pairs_file(distilled)} if mix != "original" else {}
    except CorpusError as err:
        print(f"error: --distilled {err} (a file python -m workshop distill writes)", file=sys.stderr)
        return 2
    return train(argv, partial(mix_distilled, teacher=teacher, mix=mix))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workshop student",
        description=__doc__.splitlines()[0],
        epilog="Every other argument is python -m training.train's (--config, --corpus, --out, --section.key=value).",
    )
    parser.add_argument("--distilled", type=Path, required=True, help="the teacher's file (python -m workshop distill)")
    parser.add_argument("--mix", choices=get_args(Mix), default="both", help="what the student trains on")
    args, rest = parser.parse_known_args(argv)
    return train_student(rest, args.distilled, args.mix)
