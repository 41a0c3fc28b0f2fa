"""The forecast before Start: the dev BLEU a run of this many pairs and steps can be expected to reach.

It reads a learning-curve table measured once on the bundled Tatoeba corpus (``python -m workshop learning-curve``
writes ``TABLE_FILE``): dev BLEU by training pairs and steps, from scratch and fine-tuning the shipped model, each
curve read as its best evaluation so far. The forecast is linear in log(steps) and log(pairs) between the measured
curves, damped beyond them (curves flatten), and says when it reaches beyond them.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.bounded_read import read_json

TABLE_FILE = Path(__file__).resolve().parent / "learning_curve.json"  # python -m workshop learning-curve writes it
MODES = ("scratch", "finetune")
SHIPPED = ("es", "en")  # the shipped model's direction: fine-tuning it helps only a corpus in that direction
POOR_BLEU = 20.0  # below this a forecast comes with advice; ~20 is where a translation starts to carry the gist
FACTOR = 2.0  # the range is the forecast ÷ and × this (the table's own "factor" when it measured one)
MIN_GAIN = 3.0  # BLEU an alternative must add to be advised
# A preset the curves never trained from scratch, measured once instead: (pairs, steps, its best dev BLEU at any
# evaluation). python -m training train --config configs/tiny.toml on 16,000 random Tatoeba pairs (seed 7), 300 dev
# sentences, --optim.max_steps=8000 --run.eval_every=1000 (2026-12-03): 0.10, 0.25, 0.27, 0.27, 0.28, 0.26, 0.30, 0.29.
SMOKE_RUN = {"tiny": (16_000, 8_000, 0.3)}


class ForecastError(ValueError):
    """The learning-curve table is missing or malformed; the message names the field."""


@dataclass(frozen=True)
class Curve:
    mode: str
    pairs: int
    points: tuple[tuple[int, float], ...]  # (step, dev BLEU), steps rising


@dataclass(frozen=True)
class Table:
    curves: tuple[Curve, ...]
    preset: str  # the preset the curves were trained with: the forecast holds for it only
    factor: float = FACTOR

    def of(self, mode: str) -> list[Curve]:
        return sorted((c for c in self.curves if c.mode == mode), key=lambda c: c.pairs)


@dataclass(frozen=True)
class Forecast:
    bleu: float
    low: float
    high: float
    beyond: tuple[str, ...]  # where the table is extrapolated, in words ("fewer steps (59) than …"); () inside it
    advice: tuple[str, ...]  # what would do better, when the forecast is poor


def parse_table(data: Any, where: str = "learning curve") -> Table:
    """The checked table; ForecastError naming ``where`` and the field when it is not one."""
    rows = data.get("curves") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ForecastError(f"{where}: curves: expected a non-empty list")
    curves = []
    for i, row in enumerate(rows):
        mode, pairs, points = (row.get(k) if isinstance(row, dict) else None for k in ("mode", "pairs", "points"))
        if mode not in MODES:
            raise ForecastError(f"{where}: curves[{i}].mode: expected one of {', '.join(MODES)}")
        if not isinstance(pairs, int) or pairs < 1:
            raise ForecastError(f"{where}: curves[{i}].pairs: expected a whole number ≥ 1")
        good = isinstance(points, list) and points and all(_point(p) for p in points)
        if not good:
            raise ForecastError(f"{where}: curves[{i}].points: expected [[step ≥ 1, BLEU 0..100], ...]")
        curves.append(Curve(mode, pairs, tuple(sorted((int(s), float(b)) for s, b in points))))
    preset, factor = data.get("preset"), data.get("factor", FACTOR)
    if not isinstance(preset, str) or not preset:
        raise ForecastError(f"{where}: preset: expected the name of the preset the curves were measured with")
    if not isinstance(factor, int | float) or not 1 <= factor <= 10:
        raise ForecastError(f"{where}: factor: expected a number from 1 to 10")
    return Table(tuple(curves), preset, float(factor))


def _point(p: Any) -> bool:
    match p:
        case [int(step), int() | float() as bleu]:
            return step >= 1 and 0 <= bleu <= 100
    return False


def load_table(path: Path = TABLE_FILE) -> Table:
    try:
        data = read_json(path, ForecastError)  # bounded: a FIFO or a folder is one line
    except ForecastError as err:
        raise ForecastError(f"no learning-curve table: {err}") from None
    return parse_table(data, str(path))


def _bracket(xs: list[float], x: float) -> tuple[int, float]:
    """The segment ``xs[i - 1], xs[i]`` nearest ``x``, and where on it ``x`` lies in log(x): 0..1 inside it."""
    i = min(max(1, bisect.bisect_left(xs, x)), len(xs) - 1)
    return i, (math.log(x) - math.log(xs[i - 1])) / (math.log(xs[i]) - math.log(xs[i - 1]))


def _loglinear(xs: list[float], ys: list[float], x: float) -> tuple[float, float]:
    """y at ``x``, linear in log(x) between the nearest measured xs; below them, the first segment's slope; above
    them, damped: each doubling past the last measured x adds half what the one before it did (learning curves
    flatten, so the gain beyond is at most twice the last doubling's). And how many doublings beyond the measured
    range ``x`` lies (0 inside)."""
    beyond = max(0.0, math.log2(xs[0] / x), math.log2(x / xs[-1]))
    if len(xs) == 1:
        return ys[0], beyond
    i, t = _bracket(xs, x)
    if x > xs[-1]:
        per_doubling = (ys[-1] - ys[-2]) / math.log2(xs[-1] / xs[-2])
        return min(100.0, max(0.0, ys[-1] + 2 * per_doubling * (1 - 2**-beyond))), beyond
    return min(100.0, max(0.0, ys[i - 1] + (ys[i] - ys[i - 1]) * t)), beyond


def expected(table: Table, pairs: int, steps: int, mode: str) -> tuple[float, float, float, int]:
    """Dev BLEU at ``pairs`` and ``steps``; doublings beyond the measured pairs and steps; the last measured step."""
    curves = table.of(mode)
    if not curves:
        raise ForecastError(f"learning curve: no {mode} curve measured")
    best = [list(itertools.accumulate((b for _, b in c.points), max)) for c in curves]  # each curve's best so far
    read = [_loglinear([float(s) for s, _ in c.points], b, float(steps)) for c, b in zip(curves, best, strict=True)]
    sizes = [float(c.pairs) for c in curves]
    bleu, pairs_beyond = _loglinear(sizes, [b for b, _ in read], float(pairs))
    i, t = _bracket(sizes, float(pairs)) if len(curves) > 1 else (0, 1.0)
    t = min(1.0, max(0.0, t))
    weights = {i - 1: 1 - t, i: t} if len(curves) > 1 else {0: 1.0}
    steps_beyond = sum(w * read[j][1] for j, w in weights.items())
    last = min(curves[j].points[-1][0] for j, w in weights.items() if w > 0)
    return bleu, pairs_beyond, steps_beyond, last


def forecast(pairs: int, steps: int, mode: str, src_lang: str, tgt_lang: str, table: Table) -> Forecast:
    """The dev BLEU ``steps`` steps on ``pairs`` pairs may reach, its range, where it extrapolates, what does better."""
    if pairs < 1 or steps < 1:
        raise ValueError(f"pairs and steps: expected whole numbers ≥ 1, got {pairs} and {steps}")
    bleu, pairs_beyond, steps_beyond, last = expected(table, pairs, steps, mode)
    measured = table.of(mode)
    beyond = []
    if pairs_beyond > 0 and pairs < measured[0].pairs:
        beyond.append(f"fewer pairs ({pairs:,}) than the smallest curve's {measured[0].pairs:,}")
    elif pairs_beyond > 0:
        beyond.append(f"more pairs ({pairs:,}) than the largest curve's {measured[-1].pairs:,}")
    first = min(c.points[0][0] for c in measured)
    if steps_beyond > 0 and steps < first:
        beyond.append(f"fewer steps ({steps:,}) than the curves begin with ({first:,})")
    elif steps_beyond > 0:
        beyond.append(f"more steps ({steps:,}) than the curves measured (up to {last:,})")
    factor = table.factor * (1 + 0.25 * (pairs_beyond + steps_beyond))  # wider the further beyond
    advice = _advice(table, pairs, steps, mode, (src_lang, tgt_lang), bleu) if bleu < POOR_BLEU else ()
    return Forecast(bleu, bleu / factor, min(100.0, bleu * factor), tuple(beyond), advice)


def _advice(table: Table, pairs: int, steps: int, mode: str, direction: tuple[str, str], bleu: float) -> tuple:
    """Fine-tuning the shipped model (its direction only), more data, more steps: each when it adds MIN_GAIN."""
    advice = []
    if mode == "scratch" and direction == SHIPPED and table.of("finetune"):
        tuned = expected(table, pairs, steps, "finetune")[0]
        if tuned >= bleu + MIN_GAIN:
            advice.append(f"fine-tune the shipped Spanish → English model instead (about {tuned:.0f} BLEU)")
    largest = max(c.pairs for c in table.of(mode))
    more = expected(table, largest, steps, mode)[0]
    if pairs < largest and more >= bleu + MIN_GAIN:
        advice.append(f"use more data ({largest:,} pairs: about {more:.0f} BLEU in as many steps)")
    longer, _, beyond, last = expected(table, pairs, 4 * steps, mode)
    if longer >= bleu + MIN_GAIN:
        guess = ", beyond the measured steps" if beyond > 0 else ""
        advice.append(f"train longer (four times the steps and minutes: about {longer:.0f} BLEU{guess})")
    return tuple(advice) or (f"more steps or data than the table holds ({largest:,} pairs, {last:,} steps)",)
