"""``python -m training.calibrate``: a few real training steps on a corpus sample, timed on this machine.

The Train page's estimate (jobs/estimate.py) scales these figures to the whole corpus and the chosen limits. Every
piece is the run's own (``prepared``: its split and tokenizer; ``train_step``, ``evaluate_nll``, ``dev_scores``).
Nothing is written but the JSON file ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from data.batch import Example, TrainingSet, collate, encode_pairs
from data.corpus import CorpusError, Pair, ReadReport, read_pairs_file, write_pairs
from data.tokenizer import Tokenizer, TokenizerError, train_tokenizer
from model.config import ConfigError
from model.transformer import Transformer
from model.weights import ModelLoadError
from training import distributed
from training.metrics import MetricsLog
from training.prepare import load_and_split
from training.train import build_model, parent_shape
from training.train_config import TrainConfig, load_train_config
from training.trainer import RunContext, dev_scores, epoch_batches, evaluate_nll, loss_for, make_optimizer, train_step

CALIBRATION_VERSION = 1  # jobs/estimate.py refuses a stored calibration of another version
BUDGET_S = 20.0  # seconds of timed steps at most (the first, warm-up step is not timed)
STEPS = 8  # optimizer steps timed
MAX_SAMPLE = 2000  # pairs of the corpus the calibration reads (every k-th): enough to count pieces and batches
MAX_TIMED_SENTENCES = 20  # dev sentences translated to time one translation


def prepared(config: TrainConfig, corpus: Path) -> tuple[TrainConfig, Tokenizer, Any]:
    """The sample's split and tokenizer, as ``prepare_data`` makes them (no noised extras for the vocabulary); with
    ``run.init_from`` (the Train page's fine-tune), the parent's shape and tokenizer."""
    d = dataclasses.replace(config.data, corpora=(str(corpus),), format="tsv", columns=())
    parts = load_and_split(d, ReadReport())
    if config.run.init_from:
        parent = Path(config.run.init_from)
        config = dataclasses.replace(config, model=parent_shape(parent, [], d.case_markup))
        tokenizer = Tokenizer.load(parent)
        tokenizer = tokenizer.with_case_markup() if d.case_markup and not tokenizer.case_markup else tokenizer
    else:
        tokenizer = train_tokenizer(parts.train, d.vocab_size, d.joint_vocab, (), d.case_markup)
    return config, tokenizer, parts


def measure(config: TrainConfig, corpus: Path) -> dict:
    """Time ``STEPS`` real steps (within ``BUDGET_S``), one dev loss and a few greedy translations of a sample."""
    start = time.perf_counter()
    pairs = read_pairs_file(corpus)
    sample = pairs[:: max(1, -(-len(pairs) // MAX_SAMPLE))][:MAX_SAMPLE]  # every k-th pair of the checked corpus
    with tempfile.TemporaryDirectory() as folder:
        write_pairs(sample, Path(folder) / "sample.tsv")
        config, tokenizer, parts = prepared(config, Path(folder) / "sample.tsv")
    env = distributed.setup(config.run)
    model = build_model(config, tokenizer, env, resume=False)
    optimizer = make_optimizer(model, config.optim)  # its first use imports much of torch: the run pays it too
    setup_s = time.perf_counter() - start
    max_len = min(config.data.max_len, model.config.max_positions)
    train_set = TrainingSet(parts.train, tokenizer, max_len, config.data.noise, 0.0, config.optim.seed)
    run = RunContext(config, env, corpus.parent, MetricsLog(corpus.parent / "unused", False))
    steps_per_epoch, pieces, times = time_steps(model, optimizer, train_set.epoch(0), run)
    loss_s, translate_s = time_evaluation(model, tokenizer, parts.dev, run)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process's peak resident memory (KiB)
    if env.device.type == "cuda":  # or the peak allocated on the GPU
        peak_mib = torch.cuda.max_memory_allocated(env.device) / 2**20
    return {
        "version": CALIBRATION_VERSION,
        "device": str(env.device),
        "threads": torch.get_num_threads(),
        "sample_pairs": len(sample),
        "dev_pairs": len(parts.dev),
        "test_pairs": len(parts.test),
        "train_pairs": len(parts.train),
        "steps_per_epoch": steps_per_epoch,
        "pieces_per_pair": pieces,
        "seconds_per_step": statistics.median(times) if times else float("nan"),
        "steps_timed": len(times),
        "dev_loss_seconds_per_pair": loss_s,
        "translate_seconds_per_sentence": translate_s,
        "setup_seconds": setup_s,
        "peak_memory_mb": peak_mib,
        "parameters": model.num_parameters(),
    }


def time_steps(
    model: Transformer, optimizer: torch.optim.Optimizer, examples: list[Example], run: RunContext
) -> tuple[int, float, list[float]]:
    """Optimizer steps per epoch of the sample, pieces per pair, and the seconds of up to ``STEPS`` real steps after
    the first (which warms the allocator up), within ``BUDGET_S``."""
    o, c = run.config.optim, model.config
    batches = epoch_batches(examples, o, run.env, 0)
    chunks = [batches[i : i + o.accumulate] for i in range(0, len(batches), o.accumulate)]
    chunks = (chunks * (STEPS // len(chunks) + 2))[: STEPS + 1]  # a tiny sample: its batches again
    model.train()
    loss_module, times = loss_for(model, run), []
    for step, chunk in enumerate(chunks, start=1):
        micro = [collate([examples[i] for i in idx], c.pad_id, c.bos_id) for idx in chunk]
        start = time.perf_counter()
        train_step(loss_module, optimizer, micro, run, step)
        if run.env.device.type == "cuda":
            torch.cuda.synchronize()
        if step > 1:
            times.append(time.perf_counter() - start)
        if sum(times) > BUDGET_S:
            break
    pieces = sum(len(e.src) + len(e.tgt) for e in examples) / max(1, len(examples))
    return max(1, len(batches) // o.accumulate), pieces, times


def time_evaluation(model: Transformer, tokenizer: Tokenizer, dev: list[Pair], run: RunContext) -> tuple[float, float]:
    """Seconds per dev pair of the dev loss, and per sentence of a greedy translation (dev BLEU, the test split)."""
    config = run.config
    examples = encode_pairs(dev, tokenizer, min(config.data.max_len, model.config.max_positions))
    begin = time.perf_counter()
    evaluate_nll(model, examples, config, run.env)
    loss_s = (time.perf_counter() - begin) / max(1, len(examples))
    sentences = dev[:MAX_TIMED_SENTENCES]
    begin = time.perf_counter()
    dev_scores(model, tokenizer, sentences, run.env)
    return loss_s, (time.perf_counter() - begin) / max(1, len(sentences))


def main(argv: list[str] | None = None) -> int:
    entered = time.time()
    parser = argparse.ArgumentParser(prog="python -m training.calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="TOML preset")
    parser.add_argument("--corpus", type=Path, required=True, help="a sample of the checked pairs (TSV)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--launched-at", type=float, help="time.time() when the caller started this process")
    args, rest = parser.parse_known_args(argv)
    overrides = [a[2:] for a in rest if a.startswith("--") and "=" in a]
    if len(overrides) != len(rest):
        parser.error("overrides look like --optim.lr=5e-4")
    try:
        config = load_train_config(args.config, overrides)
        distributed.check_machine(config.run)
        figures = measure(config, args.corpus)
    except (ConfigError, CorpusError, TokenizerError, ModelLoadError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # Starting Python and importing torch, which every training process pays too (CPU time when not told).
    figures["startup_seconds"] = entered - args.launched_at if args.launched_at else time.process_time()
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
