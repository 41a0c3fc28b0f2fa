"""Training-pipeline throughput on the real corpus, measured side by side in one run.

The project's pipeline (length-bucketed token-budget batches, output projection and loss on real target
positions only, this project's Transformer) against ``torch.nn.Transformer`` of the same dimensions fed
plain shuffled batches of the same token budget. Same data, same preset, same number of steps.
Run with tcmalloc for the allocator lever:

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 python -m workshop bench train_speed
    python -m workshop bench train_speed --steps 20 --preset configs/small.toml
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from pathlib import Path

import torch

from data.batch import batch_indices, collate, encode_pairs, padding_fraction
from data.corpus import ReadReport
from data.tokenizer import train_tokenizer
from model.transformer import Transformer
from training.prepare import load_and_split
from training.train_config import load_train_config
from training.trainer import TranslationLoss
from translate.settings import SHARED_DATA
from workshop.bench.model_speed import TorchBaseline
from workshop.bounds import MAX_TIMED, within

CORPUS = SHARED_DATA / "tatoeba-spa-eng" / "spa-eng.tsv"


def run(module: torch.nn.Module, batches: list, steps: int) -> tuple[float, float]:
    """Median target tokens/s and mean seconds per step over ``steps`` steps after 3 warm-up steps."""
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4)
    rates, seconds = [], []
    for i, batch in enumerate(batches[: steps + 3]):
        start = time.perf_counter()
        out = module(batch.src, batch.tgt_in, batch.tgt_out)
        loss = out[0] if isinstance(out, tuple) else out
        (loss / batch.n_tgt_tokens).backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= 3:
            elapsed = time.perf_counter() - start
            rates.append(batch.n_tgt_tokens / elapsed)
            seconds.append(elapsed)
    return sum(b.n_tgt_tokens for b in batches[3 : steps + 3]) / sum(seconds), statistics.mean(seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench train_speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--preset", type=Path, default=Path("configs/small.toml"))
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    within("--steps", args.steps, 1, MAX_TIMED, "timed steps")
    config = load_train_config(args.preset, [f"data.corpora=['{args.corpus}']"])
    parts = load_and_split(config.data, ReadReport())
    tokenizer = train_tokenizer(parts.train, config.data.vocab_size, config.data.joint_vocab)
    examples = encode_pairs(parts.train, tokenizer, config.data.max_len)
    m, o = config.model, config.optim
    model_config = dataclasses.replace(
        m, src_vocab_size=tokenizer.src.get_piece_size(), tgt_vocab_size=tokenizer.tgt.get_piece_size()
    )

    def batches(bucketing: bool) -> tuple[list, float]:
        indices = batch_indices(examples, o.max_tokens, seed=1, epoch=0, bucketing=bucketing)
        return [collate([examples[i] for i in idx], 0, 2) for idx in indices[: args.steps + 3]], padding_fraction(
            examples, indices
        )

    bucketed, bucketed_pad = batches(True)
    plain, plain_pad = batches(False)
    torch.manual_seed(0)
    baseline = TorchBaseline(model_config).train()
    torch.manual_seed(0)
    ours = TranslationLoss(Transformer(model_config).train(), o.label_smoothing)
    results = [
        ("nn.Transformer, plain shuffled batches, loss on all positions", plain_pad, *run(baseline, plain, args.steps)),
        ("this model, plain shuffled batches", plain_pad, *run(ours, plain, args.steps)),
        ("nn.Transformer, length-bucketed batches", bucketed_pad, *run(baseline, bucketed, args.steps)),
        ("this pipeline: bucketing + real-position loss", bucketed_pad, *run(ours, bucketed, args.steps)),
    ]
    allocator = "tcmalloc" if "tcmalloc" in os.environ.get("LD_PRELOAD", "") else "glibc malloc"
    print(
        f"\n{args.preset}: d_model {m.d_model}, {m.n_encoder_layers}+{m.n_decoder_layers} layers, "
        f"{o.max_tokens}-token batches, {args.steps} steps each, {torch.get_num_threads()} threads, {allocator}"
    )
    print("| pipeline | padding | target tok/s | s/step | vs baseline |\n|---|---:|---:|---:|---:|")
    base = results[0][2]
    for name, pad, rate, seconds in results:
        print(f"| {name} | {pad:.1%} | {rate:,.0f} | {seconds:.2f} | {rate / base:.2f}× |")
