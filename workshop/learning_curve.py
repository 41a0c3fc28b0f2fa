"""``python -m workshop learning-curve``: the dev BLEU a preset reaches by corpus size and training steps, measured
once on the bundled corpus, for the Train page's forecast (jobs/forecast.py reads the table this writes).

Each curve is one real run of ``python -m training train``: from scratch on a random sample of the corpus, or
fine-tuning the shipped model (the Train page's "Start from", jobs/control.py) on pairs it never saw (its own dev
and test pairs). The table holds the dev BLEU (greedy, sacrebleu) at each evaluation. The table is keyed by steps,
not minutes: a step's seconds depend on the machine and its load, and the estimate already turns minutes into steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from data.corpus import CorpusError, read_pairs_file, write_pairs
from data.split_record import read_record
from jobs.control import fine_tune_overrides
from jobs.forecast import TABLE_FILE, ForecastError, Table, expected, load_table, parse_table
from jobs.run_progress import read_jsonl
from model.bounded_read import read_json, read_text
from model.run_dir import METRICS_LOG_FILE, split_file
from training.outputs import check_file
from training.prepare import model_data
from translate.cli import refuse_unless
from translate.settings import REPO_ROOT

CORPUS = REPO_ROOT.parent / "shared" / "data" / "tatoeba-spa-eng" / "spa-eng.tsv"
SHIPPED = REPO_ROOT / "checkpoints" / "es-en"
PRESET = REPO_ROOT / "configs" / "small.toml"
MAX_CORPUS_BYTES = 1 << 30  # the corpus is read whole once: the bundled one is 13 MB
# MODE:PAIRS:STEPS:EVAL_EVERY. Below the small preset's 800 warmup steps the learning rate at a step does not depend
# on max_steps, so each evaluation is what a run stopped there would reach (before averaging its snapshots).
CURVES = ("scratch:16000:800:100", "scratch:1000:800:100", "scratch:4000:800:100", "finetune:1000:200:50")


class CurveError(ValueError):
    """A curve that is not one, or whose run failed; the message names it."""


@dataclasses.dataclass(frozen=True)
class Curve:
    mode: str  # "scratch" or "finetune"
    pairs: int
    steps: int
    eval_every: int

    @classmethod
    def parse(cls, text: str) -> Curve:
        """``scratch:4000:400:100``; CurveError naming the curve when it is not one."""
        parts = text.split(":")
        if len(parts) != 4 or parts[0] not in ("scratch", "finetune") or not all(p.isdigit() for p in parts[1:]):
            raise CurveError(f"--curve {text!r}: expected MODE:PAIRS:STEPS:EVAL_EVERY, MODE scratch|finetune")
        return cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]))

    @property
    def name(self) -> str:
        return f"{self.mode}-{self.pairs}"


def pools(curves: list[Curve], corpus: Path) -> dict[str, list]:
    """What each mode samples from, read once before any run: the corpus's lines (scratch), the shipped model's unseen
    dev and test pairs (finetune); CorpusError when a curve asks for more pairs than there are."""
    found: dict[str, list] = {}
    if any(c.mode == "scratch" for c in curves):
        found["scratch"] = [
            line for line in read_text(corpus, MAX_CORPUS_BYTES, CorpusError).splitlines() if line.strip()
        ]
    if any(c.mode == "finetune" for c in curves):
        dev, test = read_record(SHIPPED, dataclasses.replace(model_data(SHIPPED), corpora=(str(corpus),)))
        found["finetune"] = dev + test
    for c in curves:
        if c.pairs > len(found[c.mode]):
            raise CorpusError(f"--curve {c.name}: {c.pairs:,} pairs asked; {corpus} gives {len(found[c.mode]):,}")
    return found


def sample(curve: Curve, pool: list, folder: Path, seed: int) -> Path:
    """``curve.pairs`` random pairs of ``pool`` (``pools``), as a corpus file in ``folder``."""
    path, chosen = folder / f"{curve.name}.tsv", random.Random(seed).sample(pool, curve.pairs)
    if curve.mode == "scratch":
        path.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    else:
        write_pairs(chosen, path)
    return path


def measure(curve: Curve, pool: list, work: Path, seed: int) -> dict:
    """One run of ``python -m training train`` for ``curve``; its dev BLEU at each evaluation."""
    run_dir = work / curve.name
    subset = sample(curve, pool, work, seed)
    parent = fine_tune_overrides(SHIPPED) if curve.mode == "finetune" else []
    limits = [f"optim.max_steps={curve.steps}", "optim.max_minutes=0", f"run.eval_every={curve.eval_every}"]
    limits += ["optim.max_epochs=1000000"]  # steps, not the preset's 100 epochs, end a small sample's run
    argv = [sys.executable, "-m", "training", "train", "--config", str(PRESET), "--corpus", str(subset)]
    argv += ["--out", str(run_dir), *(f"--{o}" for o in [*parent, *limits, "run.patience=0"])]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    begin = time.time()
    with open(work / f"{curve.name}.log", "w", encoding="utf-8") as log:
        done = subprocess.run(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise CurveError(f"{curve.name}: training failed (exit {done.returncode}), see {work / curve.name}.log")
    return measured(curve, run_dir, (time.time() - begin) / 60)


def measured(curve: Curve, run_dir: Path, minutes: float) -> dict:
    """The curve's row of the table from its run's metrics.jsonl (a run stopped early keeps its evaluations)."""
    records = [r for r in read_jsonl(run_dir / METRICS_LOG_FILE) if "dev_bleu" in r and "step" in r]
    return {
        "mode": curve.mode,
        "pairs": curve.pairs,
        "dev_sentences": min(300, len(read_pairs_file(split_file(run_dir, "dev")))),
        "points": [[r["step"], round(r["dev_bleu"], 2)] for r in records],
        "minutes": round(minutes, 1),
    }


def against(row: dict, table: Table) -> dict:
    """A measured curve beside the table's forecast of it at each evaluation, and the factor between the two (BLEU
    under 1 counted as 1: a ratio of near-zero scores says nothing)."""
    points = [
        [step, bleu, round(expected(table, row["pairs"], step, row["mode"])[0], 2)] for step, bleu in row["points"]
    ]
    factor = max(max(m, 1.0, f) / max(1.0, min(m, f)) for _, m, f in points)
    return {"pairs": row["pairs"], "step_measured_forecast": points, "factor": round(factor, 2)}


def held_out(table: dict) -> list[dict]:
    """Each from-scratch curve forecast from the others (beyond them for the smallest and the largest), beside what
    it measured; none with fewer than three curves."""
    rows = sorted((c for c in table["curves"] if c["mode"] == "scratch"), key=lambda c: c["pairs"])
    checks = []
    for row in rows if len(rows) >= 3 else []:
        rest = parse_table({**table, "curves": [c for c in table["curves"] if c is not row]})
        checks.append({**against(row, rest), "between": rows[0] is not row is not rows[-1]})
    return checks


def check(tries: Path, table: Path) -> None:
    """Print each curve of ``tries`` (a table this command wrote with --out) beside the forecast ``table`` makes of
    it: how the page's forecast fares on runs it never saw."""
    forecasts, tried = load_table(table), read_json(tries, ForecastError)
    parse_table(tried, str(tries))  # a table this command wrote, or ForecastError naming the field
    for row in tried["curves"]:
        made = against(row, forecasts)
        print(f"{row['mode']} {row['pairs']:,} pairs: factor {made['factor']} (step, measured, forecast)")
        print("  " + "  ".join(f"{s}: {m:.1f} / {f:.1f}" for s, m, f in made["step_measured_forecast"]))


def write_table(curves: list[dict], out: Path) -> None:
    """The table at ``out`` with ``curves`` in it (replacing the curves of the same mode and size it held); its
    command is the default one, whose curves (``CURVES``) are the table's."""
    new = {(c["mode"], c["pairs"]) for c in curves}
    old = json.loads(out.read_text(encoding="utf-8"))["curves"] if out.is_file() else []
    curves = [*curves, *(c for c in old if (c["mode"], c["pairs"]) not in new)]
    table = {
        "about": "dev BLEU (greedy) of the small preset at each evaluation, by training pairs and steps; from "
        "scratch on random samples of the Tatoeba corpus, or fine-tuning the shipped model on pairs it never saw",
        "command": "python -m workshop learning-curve",
        "preset": PRESET.stem,
        "machine": f"{os.cpu_count()} CPU cores, 1 thread per run ({platform.machine()})",
        "curves": sorted(curves, key=lambda c: (c["mode"], c["pairs"])),
    }
    checks = held_out(table)
    if checks:  # the forecast's range: the worst held-out factor, at least 1.5
        table |= {"factor": round(max(1.5, *(c["factor"] for c in checks)), 2), "held_out": checks}
    text = json.dumps(table, indent=1)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: f"[{' '.join(m.group(1).split())}]", text)  # [s, b] on one line
    out.write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop learning-curve", description=__doc__.splitlines()[0])
    parser.add_argument("--curve", action="append", help=f"MODE:PAIRS:STEPS:EVAL_EVERY (default {' '.join(CURVES)})")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--work", type=Path, default=REPO_ROOT / "runs" / "learning-curve", help="run folders")
    parser.add_argument("--out", type=Path, default=TABLE_FILE, help="the table (JSON)")
    parser.add_argument("--lanes", type=int, default=2, help="runs at once (one thread each)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--check", type=Path, help="a table of other runs (--out): print each beside the forecast")
    args = parser.parse_args(argv)
    refuse_unless(args.lanes >= 1, f"--lanes {args.lanes}: expected 1 or more runs at once")
    try:  # every path checked before the first run
        if args.check:
            check(args.check, args.out)
            return 0
        curves = [Curve.parse(c) for c in args.curve or CURVES]
        check_file(args.out, "--out")
        if args.out.is_file():
            load_table(args.out)  # its curves are kept: a table this command wrote
        found = pools(curves, args.corpus)
        args.work.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(args.lanes) as pool:
            futures = [pool.submit(measure, c, found[c.mode], args.work, args.seed) for c in curves]
            done: list[dict] = []
            for future in as_completed(futures):  # written after each curve: a stopped measurement keeps what it has
                done.append(future.result())
                write_table(done, args.out)
                print(f"{done[-1]['mode']} {done[-1]['pairs']}: {done[-1]['points']}", flush=True)
    except (CurveError, ForecastError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
