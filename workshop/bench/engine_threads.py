"""CTranslate2's thread settings beside PyTorch's, in one process as the command lines use them: which to choose.

Two thread pools on few cores can make both several times slower (torch's OpenMP workers spin after each parallel
region while CTranslate2's want the same cores). Each setting runs in a fresh process that first decodes with
PyTorch (so torch's pool is alive, as in ``workshop.bench.model_speed`` and the app), then times CTranslate2 int8 at
batch 1 and batch 64, greedy. Printed side by side, with PyTorch itself as the baseline:

    python -m workshop bench engine_threads --model checkpoints/es-en --limit 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from translate.translator import Translator
from workshop.bounds import MAX_SENTENCES, MAX_TIMED, within
from workshop.ct2 import CT2Translator

CASES = [  # (torch threads while CTranslate2 decodes, CTranslate2 inter_threads, intra_threads); 0 = all cores
    (0, 1, 0),  # one worker using every core (intra-op threads)
    (0, 1, 1),  # one single-threaded worker
    (1, 1, 0),
    (0, 0, 1),  # one single-threaded worker per core, each decoding its share of a batch: the engine's default
]


def measure(model: Path, ct2_dir: Path, sources: list[str], case: tuple[int, int, int], latency: int) -> dict:
    """One process's figures (run in a child: ``--child``)."""
    cores = os.cpu_count() or 1
    pytorch = Translator.load(model)
    pytorch.translate_all(sources[:128])  # torch's pool is alive from here on
    torch_threads, inter, intra = case
    out: dict = {}
    if case == CASES[0]:  # the baseline row: PyTorch itself
        out["pytorch_batch64"], out["pytorch_batch1_ms"] = speeds(pytorch, sources, latency)
    torch.set_num_threads(torch_threads or cores)
    ct2 = CT2Translator(pytorch.model, pytorch.tokenizer, ct2_dir, threads=(inter or cores, intra or cores))
    ct2.translate_all(sources[:64])  # warm-up
    out["ct2_batch64"], out["ct2_batch1_ms"] = speeds(ct2, sources, latency)
    return out


def speeds(translator: Translator, sources: list[str], latency: int) -> tuple[float, float]:
    """Sentences per second at batch 64, and milliseconds per sentence one at a time (the first ``latency``)."""
    start = time.perf_counter()
    translator.translate_all(sources)
    batched = len(sources) / (time.perf_counter() - start)
    start = time.perf_counter()
    for s in sources[:latency]:
        translator.translate(s)
    return batched, 1000 * (time.perf_counter() - start) / latency


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, "?" where it names none."""
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "?")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench engine_threads",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", type=Path, default=Path("checkpoints/es-en"))
    parser.add_argument("--pairs", type=Path, help="src<TAB>ref file (default: the model's test split rebuilt)")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--latency-sentences", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    within("--limit", args.limit, 1, MAX_SENTENCES, "sentences")
    within("--latency-sentences", args.latency_sentences, 1, MAX_TIMED, "sentences")
    if args.child:
        case, ct2_dir, sources_file = json.loads(args.child)
        sources = Path(sources_file).read_text(encoding="utf-8").splitlines()
        print(json.dumps(measure(args.model, Path(ct2_dir), sources, tuple(case), args.latency_sentences)))
        return
    from workshop import ct2
    from workshop.bench.model_speed import engine_pairs

    sources = [p.src for p in engine_pairs(args.model, args.pairs, args.limit)]
    cpu = cpu_name()
    print(f"{len(sources)} sentences, {os.cpu_count()} cores ({cpu}); CTranslate2 int8, greedy")
    with tempfile.TemporaryDirectory() as tmp:
        ct2_dir = ct2.export(args.model, Path(tmp) / "int8", "int8")
        sources_file = Path(tmp) / "sources.txt"
        sources_file.write_text("\n".join(sources) + "\n", encoding="utf-8")
        rows, base = [], {}
        for case in CASES:
            child = json.dumps([case, str(ct2_dir), str(sources_file)])
            argv = ["--model", str(args.model), "--child", child, "--latency-sentences", str(args.latency_sentences)]
            done = subprocess.run(
                [sys.executable, "-m", "workshop", "bench", "engine_threads", *argv],
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            base = base or figures
            rows.append((*(n or "all" for n in case), figures))
    b64, b1 = base["pytorch_batch64"], base["pytorch_batch1_ms"]
    print(f"\nPyTorch fp32 baseline: {b64:,.0f} sentences/s at batch 64, {b1:.1f} ms per sentence at batch 1\n")
    print("| torch threads | CT2 inter | CT2 intra | batch 64 sentences/s | × PyTorch | batch 1 ms | × PyTorch |")
    print("|---|---|---|---:|---:|---:|---:|")
    for torch_threads, inter, intra, f in rows:
        print(
            f"| {torch_threads} | {inter} | {intra} | {f['ct2_batch64']:,.0f} | {f['ct2_batch64'] / b64:.2f} "
            f"| {f['ct2_batch1_ms']:.1f} | {b1 / f['ct2_batch1_ms']:.2f} |"
        )
