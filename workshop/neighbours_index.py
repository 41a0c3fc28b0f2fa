"""``python -m workshop neighbours-index``: a model's sentence index for the neighbours view, made once and kept beside
it (the shipped model's is in ``checkpoints/es-en``), with the page's own builder (``lab/neighbours``), then checked
on a sample of its training pairs against a brute-force search over every pair's exact vector."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from lab.neighbours.lookup import CANDIDATES, K
from lab.neighbours.sentence_index import NEIGHBOURS_INDEX_FILE, NeighboursError, SentenceIndex, build, save
from translate.translator import DEFAULT_MODEL, Translator
from workshop.bounds import within

MAX_CHECK = 10_000  # training pairs checked, each against every pair of the index by brute force


def check(index: SentenceIndex, vectors: np.ndarray, rows: np.ndarray) -> tuple[int, int, int]:
    """For each pair of ``rows``: is the compact index's nearest its own Spanish, is the exact nearest among the
    candidates its own Spanish, and how many of the exact top K (over every pair) are among the candidates."""
    own = own_exact = kept = 0
    for r in rows:
        approximate = np.argsort(-index.similarities(vectors[r]), kind="stable")[:CANDIDATES]
        exact = vectors @ vectors[r]
        own += index.sources[approximate[0]] == index.sources[r]
        own_exact += index.sources[approximate[np.argmax(exact[approximate])]] == index.sources[r]
        kept += len(set(np.argsort(-exact)[:K]) & set(approximate))
    return own, own_exact, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop neighbours-index", description=__doc__)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model folder (default: the shipped one)")
    parser.add_argument("--check", type=int, default=200, help="training pairs checked (default 200)")
    args = parser.parse_args(argv)
    within("--check", args.check, 1, MAX_CHECK, "training pairs")
    if not os.access(args.model, os.W_OK):
        print(f"error: --model {args.model}: cannot write {NEIGHBOURS_INDEX_FILE} there", file=sys.stderr)
        return 2
    translator, shown = Translator.load(args.model), [0.0]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - shown[0] > 30 or done == total:
            shown[0] = time.perf_counter()
            print(f"{done:,} of {total:,} pairs", flush=True)

    try:
        index, vectors = build(translator, args.model, progress)
    except NeighboursError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    path = args.model / NEIGHBOURS_INDEX_FILE
    save(index, path)
    info = index.info
    size, each = path.stat().st_size / 1e6, 1000 * info.seconds / info.pairs
    print(f"{path}: {info.pairs:,} pairs, {info.dims} int8 dimensions, {size:.1f} MB", end="; ")
    print(f"built in {info.seconds:.0f} s, {each:.2f} ms a pair")
    rows = np.random.default_rng(0).choice(info.pairs, min(args.check, info.pairs), replace=False)
    own, own_exact, kept = check(index, vectors, rows)
    print(f"own Spanish nearest: {own} of {len(rows)} by the compact index, {own_exact} after the exact pass")
    print(f"exact top {K} among the {CANDIDATES} candidates: {kept} of {K * len(rows)}")
    return 0 if own_exact == len(rows) else 1
