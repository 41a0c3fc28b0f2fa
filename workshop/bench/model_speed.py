"""Model speed, measured side by side in one run.

1. Training-step throughput (target tokens/s, forward + backward + AdamW) of this project's Transformer
   against ``torch.nn.Transformer`` with the same dimensions, on the same batch, at two sizes; plus bf16 autocast.
2. Greedy decoding of a 30-token output with the key/value cache against without it.
3. Translation latency: ms per sentence (batch 1) and sentences/s (batch 64), with and without attention maps.
4. PyTorch against its CTranslate2 export (float32 and int8, written to a temporary folder) on the model's test
   split: sentences/s at batch 64 (greedy and beam 4), ms per sentence at batch 1 (greedy), BLEU of each, and
   how many outputs are token for token PyTorch's greedy ones.

    python -m workshop bench model_speed                  # all four, both sizes
    python -m workshop bench model_speed --sizes small --steps 5
    python -m workshop bench model_speed --sections engines --threads 2 --limit 1000 --latency-sentences 200
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from data.readers import Pair
from model.config import ModelConfig
from model.decode import greedy
from model.layers import sinusoidal_table
from model.run_dir import CONFIG_FILE, split_file
from model.transformer import Transformer
from training.evaluate import corpus_scores, read_test_set
from training.trainer import TranslationLoss
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop import ct2
from workshop.bounds import MAX_REPEATS, MAX_SENTENCES, MAX_TIMED, use_threads, within

SIZES = {
    "small": dict(d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=3, n_decoder_layers=3),
    "base": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6),
}
VOCAB = 8000
SECTIONS = ("training", "cache", "latency", "engines")
T = TypeVar("T")
PAD, BOS, EOS = 0, 2, 3


class TorchBaseline(nn.Module):
    """torch.nn.Transformer with the same embeddings, positions, pre-norm and tied output projection."""

    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=PAD)
        self.register_buffer("pe", sinusoidal_table(c.max_positions, c.d_model), persistent=False)
        self.transformer = nn.Transformer(
            c.d_model,
            c.n_heads,
            c.n_encoder_layers,
            c.n_decoder_layers,
            c.d_ff,
            c.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self.output.weight = self.embed.weight

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.c.d_model)
        x = self.embed(src) * scale + self.pe[: src.size(1)]
        y = self.embed(tgt_in) * scale + self.pe[: tgt_in.size(1)]
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
        h = self.transformer(
            x,
            y,
            tgt_mask=causal,
            src_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt_in == PAD,
            memory_key_padding_mask=src == PAD,
        )
        logits = self.output(h)  # every position, padding included: the usual recipe
        return F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD, label_smoothing=0.1, reduction="sum")


def make_batch(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """A fixed batch with Tatoeba-like lengths (5–20 subwords), padded to its longest sentence."""
    g = torch.Generator().manual_seed(seed)
    src_len = torch.randint(5, 21, (n,), generator=g)
    tgt_len = (src_len + torch.randint(-2, 3, (n,), generator=g)).clamp(min=3)
    s, t = int(src_len.max()), int(tgt_len.max())
    src = torch.randint(4, VOCAB, (n, s), generator=g)
    tgt_out = torch.randint(4, VOCAB, (n, t), generator=g)
    for i in range(n):
        src[i, src_len[i] - 1], src[i, src_len[i] :] = EOS, PAD
        tgt_out[i, tgt_len[i] - 1], tgt_out[i, tgt_len[i] :] = EOS, PAD
    tgt_in = torch.cat([torch.full((n, 1), BOS), tgt_out[:, :-1]], dim=1).masked_fill(tgt_out == PAD, PAD)
    return src, tgt_in, tgt_out, int((tgt_out != PAD).sum())


def step_time(module: nn.Module, batch: tuple, steps: int, autocast: bool = False) -> float:
    """Median seconds per training step after two warm-up steps."""
    src, tgt_in, tgt_out, n_tokens = batch
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4)
    times = []
    for i in range(steps + 2):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = module(src, tgt_in, tgt_out)
            loss = out[0] if isinstance(out, tuple) else out
        (loss / n_tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= 2:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_training(size: str, steps: int, sentences: int) -> None:
    config = ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, dropout=0.1, **SIZES[size])
    batch = make_batch(sentences)
    n_tokens = batch[3]
    torch.manual_seed(0)
    ours = TranslationLoss(Transformer(config).train(), label_smoothing=0.1)
    torch.manual_seed(0)
    baseline = TorchBaseline(config).train()
    results = {
        "nn.Transformer (fp32)": step_time(baseline, batch, steps),
        "this model (fp32)": step_time(ours, batch, steps),
        "this model (bf16 autocast)": step_time(ours, batch, steps, autocast=True),
    }
    base = results["nn.Transformer (fp32)"]
    print(f"\n## training step, {size} ({SIZES[size]}), batch of {sentences} sentences / {n_tokens} target tokens")
    print("| model | ms/step | target tok/s | vs nn.Transformer |\n|---|---:|---:|---:|")
    for name, seconds in results.items():
        print(f"| {name} | {seconds * 1000:.0f} | {n_tokens / seconds:,.0f} | {base / seconds:.2f}× |")


def bench_cache(size: str, repeats: int) -> None:
    config = ModelConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, dropout=0.0, **SIZES[size])
    torch.manual_seed(0)
    model = Transformer(config).eval()
    print(f"\n## greedy decoding, 30-token outputs, {size} (random weights, EOS only at the length limit)")
    print("| batch | cached ms | uncached ms | speed-up |\n|---:|---:|---:|---:|")
    for b in (1, 64):
        src = make_batch(b, seed=1)[0]
        timings = {}
        for use_cache in (True, False):
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                out = greedy(model, src, max_len_a=0.0, max_len_b=30, use_cache=use_cache)
                runs.append(time.perf_counter() - start)
            assert max(len(h.tokens) for h in out) == 30
            timings[use_cache] = statistics.median(runs)
        print(
            f"| {b} | {timings[True] * 1000:.1f} | {timings[False] * 1000:.1f} | {timings[False] / timings[True]:.2f}× |"
        )


def bench_latency(model_dir: Path, repeats: int) -> None:
    translator = Translator.load(model_dir)
    test_file = model_dir / "test.tsv"
    sentences = ["Tom dijo que no sabía nadar y que nunca había aprendido a hacerlo cuando era niño."]
    if test_file.is_file():
        sentences = [line.split("\t")[0] for line in test_file.read_text(encoding="utf-8").splitlines()][:64]
    batch = (sentences * 64)[:64]
    print(f"\n## translation with the model in {model_dir} ({translator.model.num_parameters() / 1e6:.1f}M parameters)")
    print("| what | with maps | without maps |\n|---|---:|---:|")
    one = sentences[0]
    per_sentence = {}
    for maps in (True, False):
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = translator.translate(one)
            if maps:
                translator.attention(result)
            runs.append(time.perf_counter() - start)
        per_sentence[maps] = statistics.median(runs)
    print(
        f"| ms per sentence, batch 1 ({len(one.split())} words) | {per_sentence[True] * 1000:.1f} | {per_sentence[False] * 1000:.1f} |"
    )
    throughput = {}
    for maps in (True, False):
        start = time.perf_counter()
        results = translator.translate_batch(batch, DecodeOptions())
        if maps:
            for r in results:
                translator.attention(r)
        throughput[maps] = len(batch) / (time.perf_counter() - start)
    print(f"| sentences/s, batch 64 | {throughput[True]:.0f} | {throughput[False]:.0f} |")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_engines(model_dir: Path, pairs: list[Pair], latency_sentences: int, batch_size: int = 64) -> None:
    """PyTorch against CTranslate2 float32 and int8 on the same sentences: speed, BLEU, identical outputs."""
    sources, refs = [p.src for p in pairs], [p.tgt for p in pairs]
    greedy_options, beam_options = DecodeOptions(), DecodeOptions(beam_size=4)
    with tempfile.TemporaryDirectory() as tmp:
        translators = {"PyTorch fp32": Translator.load(model_dir)}
        for quantization in ct2.QUANTIZATIONS:
            out = ct2.export(model_dir, Path(tmp) / quantization, quantization)
            translators[f"CTranslate2 {quantization}"] = ct2.CT2Translator.load(model_dir, ct2_dir=out)
        rows, reference = [], None
        for name, translator in translators.items():
            translator.translate_batch(sources[:batch_size])  # warm-up
            greedy_out, greedy_s = timed(lambda t=translator: t.translate_all(sources, greedy_options, batch_size))
            beam_out, beam_s = timed(lambda t=translator: t.translate_all(sources, beam_options, batch_size))
            _, one_s = timed(lambda t=translator: [t.translate(s) for s in sources[:latency_sentences]])
            tokens = [r.best.tokens for r in greedy_out]
            reference = reference or tokens
            same = sum(a == b for a, b in zip(tokens, reference, strict=True))
            rows.append(
                f"| {name} | {len(sources) / greedy_s:,.0f} | {len(sources) / beam_s:,.0f} "
                f"| {one_s * 1000 / max(1, min(latency_sentences, len(sources))):.1f} "
                f"| {corpus_scores([r.text for r in greedy_out], refs)['bleu']:.2f} "
                f"| {corpus_scores([r.text for r in beam_out], refs)['bleu']:.2f} | {same}/{len(sources)} |"
            )
    print(
        f"\n## PyTorch and CTranslate2, {model_dir}, {len(sources)} test sentences, {torch.get_num_threads()} threads "
        f"(batch 1: the first {min(latency_sentences, len(sources))}, greedy)"
    )
    print(
        f"| engine | greedy sentences/s (batch {batch_size}) | beam 4 sentences/s | ms per sentence (batch 1) "
        "| BLEU greedy | BLEU beam 4 | greedy output = PyTorch's |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    print("\n".join(rows))


def engine_pairs(model_dir: Path, pairs_file: Path | None, limit: int) -> list[Pair]:
    """``--pairs``, else the run's ``splits/test.tsv``, else its test split rebuilt from the corpus; first ``limit``."""
    run_split = split_file(model_dir, "test")
    pairs_file = pairs_file or (run_split if run_split.is_file() else None)
    if pairs_file is not None:
        pairs = read_test_set(None, None, pairs_file)
    else:
        from workshop.bench.quality import test_pairs

        pairs = test_pairs(model_dir, None)
    return pairs[:limit] if limit else pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench model_speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="small,base")
    parser.add_argument("--steps", type=int, default=6, help="timed training steps per model")
    parser.add_argument("--sentences", type=int, default=200, help="sentences per training batch")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model for the latency table")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--pairs", type=Path, help="engines: src<TAB>ref test file (default: the run's split)")
    parser.add_argument("--limit", type=int, default=0, help="engines: only the first N test sentences (0 = all)")
    parser.add_argument("--latency-sentences", type=int, default=200, help="engines: sentences timed at batch 1")
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    if unknown := set(sections) - set(SECTIONS):
        parser.error(f"--sections: unknown {sorted(unknown)} (known: {', '.join(SECTIONS)})")
    for option, value, low, high in (
        ("--steps", args.steps, 1, MAX_TIMED),
        ("--sentences", args.sentences, 1, MAX_TIMED),
        ("--repeats", args.repeats, 1, MAX_REPEATS),
        ("--limit", args.limit, 0, MAX_SENTENCES),
        ("--latency-sentences", args.latency_sentences, 1, MAX_TIMED),
    ):
        within(option, value, low, high)
    use_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for size in args.sizes.split(",") if "training" in sections else []:
        bench_training(size, args.steps, args.sentences)
    if "cache" in sections:
        bench_cache("small", args.repeats)
    if not (args.model / CONFIG_FILE).is_file():
        print(f"\n(no model at {args.model}: latency and engine tables skipped)")
        return
    if "latency" in sections:
        bench_latency(args.model, args.repeats)
    if "engines" in sections:
        pairs = engine_pairs(args.model, args.pairs, args.limit)
        bench_engines(args.model, pairs, args.latency_sentences)
