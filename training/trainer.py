"""The training loop, built from small pieces: lr_at, TranslationLoss, train_step, evaluate_loss, dev_bleu."""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sacrebleu
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from data.batch import Batch, Example, batch_indices, collate
from data.corpus import Pair
from model.io import save_model
from model.tokenizer import Tokenizer
from model.translate import DecodeOptions, Translator
from model.transformer import Transformer
from training import checkpoint
from training.config import OptimConfig, TrainConfig
from training.distributed import Env, all_reduce_sum

log = logging.getLogger("training")


def lr_at(step: int, optim: OptimConfig) -> float:
    """Learning rate for optimizer step ``step`` (1-based): linear warmup, then the chosen decay."""
    warmup = max(1, optim.warmup_steps)
    if step <= warmup:
        return optim.lr * step / warmup
    if optim.schedule == "inverse_sqrt":
        return optim.lr * math.sqrt(warmup / step)
    if optim.schedule == "cosine":
        progress = min(1.0, (step - warmup) / max(1, optim.max_steps - warmup))
        floor = optim.min_lr_ratio
        return optim.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))
    return optim.lr


class TranslationLoss(nn.Module):
    """Label-smoothed cross-entropy summed over real target tokens; projects only non-pad positions."""

    def __init__(self, model: Transformer, label_smoothing: float) -> None:
        super().__init__()
        self.model = model
        self.label_smoothing = label_smoothing

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> tuple[Tensor, Tensor]:
        """Returns (smoothed loss sum, plain NLL sum) over the real tokens of ``tgt_out`` (B, T)."""
        memory, src_mask, _ = self.model.encode(src)
        hidden = self.model.decode(tgt_in, memory, src_mask).hidden  # (B, T, d_model)
        real = tgt_out != self.model.config.pad_id
        logits = self.model.output(hidden[real]).float()  # (N, V): real positions only
        target = tgt_out[real]
        loss = F.cross_entropy(logits, target, label_smoothing=self.label_smoothing, reduction="sum")
        nll = F.cross_entropy(logits.detach(), target, reduction="sum")
        return loss, nll


@dataclass
class Progress:
    """Where training is; saved with the state so that --resume continues exactly."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    tokens: int = 0
    best_dev_loss: float = float("inf")
    evals_without_improvement: int = 0
    elapsed: float = 0.0


def train_step(loss_module: nn.Module, optimizer: torch.optim.Optimizer, micro_batches: list[Batch],
               config: TrainConfig, env: Env, step: int) -> tuple[float, float, int]:
    """One optimizer step over ``micro_batches`` (gradient accumulation); returns (loss, nll, tokens) summed."""
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, config.optim)
    local_tokens = sum(b.n_tgt_tokens for b in micro_batches)
    total_tokens = all_reduce_sum(local_tokens, env)
    loss_sum = nll_sum = 0.0
    for i, batch in enumerate(micro_batches):
        batch = batch.to(env.device)
        sync = i == len(micro_batches) - 1 or not isinstance(loss_module, DistributedDataParallel)
        context = loss_module.no_sync() if not sync else _null()
        with context, env.autocast():
            loss, nll = loss_module(batch.src, batch.tgt_in, batch.tgt_out)
            # DDP averages gradients over processes; scaling by world/total makes it a per-token mean.
            (loss * env.world_size / total_tokens).backward()
        loss_sum += float(loss.detach())
        nll_sum += float(nll)
    if config.optim.clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(loss_module.parameters(), config.optim.clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, local_tokens


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@torch.inference_mode()
def evaluate_loss(model: Transformer, examples: list[Example], config: TrainConfig, env: Env) -> float:
    """Mean per-token NLL (no smoothing) on ``examples``, in eval mode."""
    was_training = model.training
    model.eval()
    loss_module = TranslationLoss(model, 0.0)
    nll_sum = tokens = 0.0
    c = model.config
    for indices in batch_indices(examples, config.optim.max_tokens, 0, 0, bucketing=True, shuffle=False):
        batch = collate([examples[i] for i in indices], c.pad_id, c.bos_id).to(env.device)
        with env.autocast():
            _, nll = loss_module(batch.src, batch.tgt_in, batch.tgt_out)
        nll_sum += float(nll)
        tokens += batch.n_tgt_tokens
    model.train(was_training)
    return nll_sum / max(1.0, tokens)


def score(model: Transformer, tokenizer: Tokenizer, pairs: list[Pair], options: DecodeOptions = DecodeOptions(),
          progress: bool = False) -> dict[str, Any]:
    """Translate ``pairs`` and score with sacrebleu BLEU and chrF (with signatures)."""
    was_training = model.training
    translator = Translator(model, tokenizer)
    start = time.perf_counter()
    hyps = translator.translate_many([p.src for p in pairs], options, progress=progress)
    seconds = time.perf_counter() - start
    model.train(was_training)
    refs = [[p.tgt for p in pairs]]
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    b, c = bleu.corpus_score(hyps, refs), chrf.corpus_score(hyps, refs)
    return {
        "bleu": round(b.score, 2), "chrf": round(c.score, 2),
        "bleu_signature": str(bleu.get_signature()), "chrf_signature": str(chrf.get_signature()),
        "sentences": len(pairs), "sentences_per_s": round(len(pairs) / max(seconds, 1e-9), 1),
        "hyp_ref_len_ratio": round(b.sys_len / max(1, b.ref_len), 3), "hypotheses": hyps,
    }


class MetricsLog:
    """Appends one JSON object per line to ``metrics.jsonl`` (rank 0 only)."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path = path
        self.enabled = enabled

    def write(self, **record: Any) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")


def train(model: Transformer, tokenizer: Tokenizer, train_examples: list[Example], dev_examples: list[Example],
          dev_pairs: list[Pair], config: TrainConfig, env: Env, run_dir: Path, resume: bool) -> Progress:
    """Train until max_steps, max_epochs, max_minutes or early stopping; rank 0 writes checkpoints and metrics."""
    o, r = config.optim, config.run
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.dim() < 2 or "embed" in name else decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=o.lr, betas=tuple(o.betas))
    progress = Progress()
    if resume:
        state = checkpoint.load_state(run_dir)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        progress = Progress(**state["progress"])
        checkpoint.restore_rng(state["rng"])
        log.info("resumed at step %d (epoch %d, batch %d)", progress.step, progress.epoch, progress.batch_in_epoch)
    loss_module: nn.Module = TranslationLoss(model, o.label_smoothing)
    if env.world_size > 1:
        loss_module = DistributedDataParallel(loss_module, device_ids=[env.device.index] if env.device.type == "cuda" else None)
    metrics = MetricsLog(run_dir / "metrics.jsonl", env.is_main)
    c = model.config
    model.train()
    bar = tqdm(total=o.max_steps, initial=progress.step, desc="training", unit="step", disable=not env.is_main,
               dynamic_ncols=True)
    window_start, window_tokens, window_loss, window_nll = time.perf_counter(), 0, 0.0, 0.0
    session_start = time.perf_counter() - progress.elapsed
    stop = False
    while not stop and progress.epoch < o.max_epochs:
        batches = batch_indices(train_examples, o.max_tokens, o.seed, progress.epoch)
        mine = batches[env.rank :: env.world_size]  # each process its own share, same count everywhere
        mine = mine[: len(batches) // env.world_size]
        while progress.batch_in_epoch + o.accumulate <= len(mine):
            chunk = mine[progress.batch_in_epoch : progress.batch_in_epoch + o.accumulate]
            micro = [collate([train_examples[i] for i in idx], c.pad_id, c.bos_id) for idx in chunk]
            progress.step += 1
            loss, nll, tokens = train_step(loss_module, optimizer, micro, config, env, progress.step)
            progress.batch_in_epoch += o.accumulate
            progress.tokens += tokens
            window_tokens, window_loss, window_nll = window_tokens + tokens, window_loss + loss, window_nll + nll
            progress.elapsed = time.perf_counter() - session_start
            bar.update(1)
            if progress.step % r.log_every == 0:
                seconds = time.perf_counter() - window_start
                record = {"step": progress.step, "epoch": progress.epoch, "loss": window_loss / max(1, window_tokens),
                          "nll": window_nll / max(1, window_tokens), "lr": lr_at(progress.step, o),
                          "tokens_per_s": window_tokens * env.world_size / seconds, "elapsed_s": progress.elapsed,
                          "max_steps": o.max_steps}
                metrics.write(kind="train", **record)
                bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")
                window_start, window_tokens, window_loss, window_nll = time.perf_counter(), 0, 0.0, 0.0
            out_of_time = o.max_minutes > 0 and progress.elapsed > o.max_minutes * 60
            stop = progress.step >= o.max_steps or out_of_time
            if progress.step % r.eval_every == 0 or stop:
                stop = _evaluate_and_save(model, tokenizer, optimizer, dev_examples, dev_pairs, config, env,
                                          run_dir, progress, metrics) or stop
            if stop:
                break
        if not stop:
            progress.epoch += 1
            progress.batch_in_epoch = 0
    bar.close()
    return progress


def _evaluate_and_save(model: Transformer, tokenizer: Tokenizer, optimizer: torch.optim.Optimizer,
                       dev_examples: list[Example], dev_pairs: list[Pair], config: TrainConfig, env: Env,
                       run_dir: Path, progress: Progress, metrics: MetricsLog) -> bool:
    """Dev loss (and BLEU), best model, snapshot and training state; returns True to stop early."""
    r = config.run
    dev_loss = evaluate_loss(model, dev_examples, config, env)
    improved = dev_loss < progress.best_dev_loss
    progress.best_dev_loss = min(progress.best_dev_loss, dev_loss)
    progress.evals_without_improvement = 0 if improved else progress.evals_without_improvement + 1
    if env.is_main:
        record = {"step": progress.step, "epoch": progress.epoch, "dev_loss": dev_loss,
                  "dev_ppl": math.exp(min(dev_loss, 50)), "elapsed_s": progress.elapsed}
        if r.dev_bleu_sentences > 0 and dev_pairs:
            scores = score(model, tokenizer, dev_pairs[: r.dev_bleu_sentences])
            record.update(dev_bleu=scores["bleu"], dev_chrf=scores["chrf"])
        metrics.write(kind="eval", **record)
        tqdm.write(f"step {progress.step}: dev loss {dev_loss:.3f}" + (f", dev BLEU {record['dev_bleu']:.1f}" if "dev_bleu" in record else ""))
        if improved:
            save_model(model, run_dir / "best")
        checkpoint.save_checkpoint(run_dir, model, progress.step, r.keep_checkpoints)
        checkpoint.save_state(run_dir, model, optimizer, progress.__dict__.copy())
    return r.patience > 0 and progress.evals_without_improvement >= r.patience
