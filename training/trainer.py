"""The training loop, built from small pieces: lr_at, TranslationLoss, train_step, evaluate_loss, dev_scores."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from data.batch import Batch, Example, TrainingSet, batch_indices, collate
from data.corpus import Pair
from model.io import save_model
from model.run_dir import BEST_DIR, EVAL_RECORD, METRICS_LOG_FILE, TRAIN_RECORD
from model.tokenizer import Tokenizer
from model.transformer import Transformer
from model.translate import Translator
from training import checkpoint
from training.config import GuidedAlignmentConfig, OptimConfig, TrainConfig
from training.distributed import Env, all_gather, all_reduce_sum, any_rank
from training.evaluate import corpus_scores
from training.guided_alignment import alignment_loss

log = logging.getLogger("training")


def lr_at(step: int, optim: OptimConfig, time_progress: float = 0.0) -> float:
    """Learning rate for optimizer step ``step`` (1-based): linear warmup, then the chosen decay.

    ``time_progress`` (0..1, see ``time_budget_progress``) lets a cosine schedule end with a minutes budget:
    the decay follows whichever is further along, steps or wall-clock time.
    """
    warmup = max(1, optim.warmup_steps)
    if step <= warmup:
        return optim.lr * step / warmup
    if optim.schedule == "inverse_sqrt":
        return optim.lr * math.sqrt(warmup / step)
    if optim.schedule == "cosine":
        progress = min(1.0, max(time_progress, (step - warmup) / max(1, optim.max_steps - warmup)))
        floor = optim.min_lr_ratio
        return optim.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))
    return optim.lr


class TranslationLoss(nn.Module):
    """Label-smoothed cross-entropy summed over real target tokens; projects only non-pad positions.

    Given guided alignment's targets it also scores the supervised head (training/guided_alignment.py).
    """

    def __init__(self, model: Transformer, label_smoothing: float, guided: GuidedAlignmentConfig | None = None) -> None:
        super().__init__()
        self.model = model
        self.label_smoothing = label_smoothing
        self.guided = guided or GuidedAlignmentConfig()

    def forward(
        self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, alignment: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Returns (smoothed loss sum, plain NLL sum) over the real tokens of ``tgt_out`` (B, T), and the alignment
        loss sum of the supervised head against ``alignment`` (B, T, S) target rows (0 without them)."""
        memory, src_mask, _ = self.model.encode(src)
        layer = None if alignment is None else self.guided.layer
        hidden, _, cross = self.model.decode(tgt_in, memory, src_mask, cross_weights_layer=layer)  # (B, T, d_model)
        real = tgt_out != self.model.config.pad_id
        logits = self.model.output(hidden[real]).float()  # (N, V): real positions only
        target = tgt_out[real]
        loss = F.cross_entropy(logits, target, label_smoothing=self.label_smoothing, reduction="sum")
        nll = F.cross_entropy(logits.detach(), target, reduction="sum")
        if alignment is None:
            return loss, nll, loss.new_zeros(())
        return loss, nll, alignment_loss(cross[layer][:, self.guided.head], alignment)  # head's rows (B, T, S)


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
    warmup_elapsed: float = -1.0  # seconds of training when warmup ended (-1: not yet)


def time_budget_progress(progress: Progress, optim: OptimConfig) -> float:
    """Share of the post-warmup minutes budget used so far (0 without a budget or during warmup)."""
    if optim.max_minutes <= 0 or progress.warmup_elapsed < 0:
        return 0.0
    budget = optim.max_minutes * 60 - progress.warmup_elapsed
    return min(1.0, (progress.elapsed - progress.warmup_elapsed) / max(1.0, budget))


def train_step(
    loss_module: nn.Module,
    optimizer: torch.optim.Optimizer,
    micro_batches: list[Batch],
    config: TrainConfig,
    env: Env,
    step: int,
    time_progress: float = 0.0,
) -> tuple[float, float, float, int]:
    """One optimizer step over ``micro_batches`` (gradient accumulation); returns (loss, nll, alignment loss,
    tokens) summed; the objective is loss + guided_alignment.weight × alignment loss."""
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, config.optim, time_progress)
    local_tokens = sum(b.n_tgt_tokens for b in micro_batches)
    total_tokens = all_reduce_sum(local_tokens, env)
    ddp = getattr(loss_module, "_orig_mod", loss_module)  # torch.compile wraps the DDP module
    weight = config.optim.guided_alignment.weight
    loss_sum = nll_sum = align_sum = 0.0
    for i, batch in enumerate(micro_batches):
        batch = batch.to(env.device)
        last = i == len(micro_batches) - 1
        # Gradients are all-reduced once per optimizer step, on the last micro-batch.
        sync = ddp.no_sync() if isinstance(ddp, DistributedDataParallel) and not last else contextlib.nullcontext()
        with sync:
            with env.autocast():
                loss, nll, align = loss_module(batch.src, batch.tgt_in, batch.tgt_out, batch.alignment)
            # DDP averages gradients over processes; scaling by world/total makes it a per-token mean.
            ((loss + weight * align) * env.world_size / total_tokens).backward()
        loss_sum += float(loss.detach())
        nll_sum += float(nll)
        align_sum += float(align.detach())
    if config.optim.clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(loss_module.parameters(), config.optim.clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, align_sum, local_tokens


@torch.inference_mode()
def evaluate_loss(model: Transformer, examples: list[Example], config: TrainConfig, env: Env) -> float:
    """Mean per-token NLL (no smoothing) on ``examples``, in eval mode; with several processes each takes a share."""
    was_training = model.training
    model.eval()
    loss_module = TranslationLoss(model, 0.0)
    shard = examples[env.rank :: env.world_size]
    nll_sum = tokens = 0.0
    c = model.config
    for indices in batch_indices(shard, config.optim.max_tokens, 0, 0, bucketing=True, shuffle=False):
        batch = collate([shard[i] for i in indices], c.pad_id, c.bos_id).to(env.device)
        with env.autocast():
            _, nll, _ = loss_module(batch.src, batch.tgt_in, batch.tgt_out)
        nll_sum += float(nll)
        tokens += batch.n_tgt_tokens
    model.train(was_training)
    return all_reduce_sum(nll_sum, env) / max(1.0, all_reduce_sum(tokens, env))


def dev_scores(model: Transformer, tokenizer: Tokenizer, pairs: list[Pair], env: Env) -> dict[str, Any] | None:
    """Greedy dev BLEU/chrF: each process translates its share, rank 0 scores all (others get None)."""
    was_training = model.training
    shard = pairs[env.rank :: env.world_size]
    hyps = Translator(model, tokenizer).translate_many([p.src for p in shard])
    model.train(was_training)
    shards = all_gather(hyps, env)
    if not env.is_main:
        return None
    merged = [shards[i % env.world_size][i // env.world_size] for i in range(len(pairs))]
    return corpus_scores(merged, [p.tgt for p in pairs])


class MetricsLog:
    """Appends one JSON object per line to ``metrics.jsonl`` (rank 0 only)."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path = path
        self.enabled = enabled

    def write(self, **record: Any) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")

    def start_fresh(self) -> None:
        """A new run starts an empty log."""
        if self.enabled:
            self.path.write_text("", encoding="utf-8")

    def truncate_after(self, step: int) -> None:
        """On resume: drop records newer than the saved state (and a line cut short by a kill), so none repeat."""
        if not self.enabled or not self.path.is_file():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("step", 0) <= step:
                kept.append(line + "\n")
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        tmp.replace(self.path)


@dataclass
class Window:
    """Sums since the last ``kind="train"`` record."""

    start: float = field(default_factory=time.perf_counter)
    steps: int = 0
    tokens: int = 0
    loss: float = 0.0
    nll: float = 0.0
    align: float = 0.0  # guided alignment's loss
    lr: float = 0.0  # learning rate of the window's last step


def make_optimizer(model: Transformer, optim: OptimConfig) -> torch.optim.AdamW:
    """AdamW; no weight decay on biases, norms and embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.dim() < 2 or "embed" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=optim.lr, betas=tuple(optim.betas))


def resume_from(
    run_dir: Path, model: Transformer, optimizer: torch.optim.Optimizer, env: Env, metrics: MetricsLog
) -> Progress:
    """Load weights, optimizer, progress and this process's RNG; forget what a killed run logged after the state."""
    state = checkpoint.load_state(run_dir)
    if any(".q_proj." in name for name in state["model"]):
        raise ValueError(
            f"{run_dir / checkpoint.STATE_FILE}: saved by an older model layout (separate q/k/v projections) whose "
            "optimizer state cannot be carried over; its weights still load and export, but resume needs a new run"
        )
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    progress = Progress(**state["progress"])
    rng = state["rng"]
    if isinstance(rng, list):  # one entry per process
        if len(rng) != env.world_size:
            log.warning(
                "state saved by %d process(es), resuming with %d: not an exact resume", len(rng), env.world_size
            )
        rng = rng[env.rank % len(rng)]
    checkpoint.restore_rng(rng)
    if env.is_main:
        metrics.truncate_after(progress.step)
        checkpoint.drop_snapshots_after(run_dir, progress.step)
    log.info("resumed at step %d (epoch %d, batch %d)", progress.step, progress.epoch, progress.batch_in_epoch)
    return progress


def train(
    model: Transformer,
    tokenizer: Tokenizer,
    train_set: TrainingSet,
    dev_examples: list[Example],
    dev_pairs: list[Pair],
    config: TrainConfig,
    env: Env,
    run_dir: Path,
    resume: bool,
) -> Progress:
    """Train until max_steps, max_epochs, max_minutes or early stopping; rank 0 writes checkpoints and metrics."""
    o, r = config.optim, config.run
    optimizer = make_optimizer(model, o)
    metrics = MetricsLog(run_dir / METRICS_LOG_FILE, env.is_main)
    if resume:
        progress = resume_from(run_dir, model, optimizer, env, metrics)
    else:
        progress = Progress()
        metrics.start_fresh()
    loss_module: nn.Module = TranslationLoss(model, o.label_smoothing, o.guided_alignment)
    if env.world_size > 1:
        loss_module = DistributedDataParallel(
            loss_module, device_ids=[env.device.index] if env.device.type == "cuda" else None
        )
    if r.compile:
        loss_module = torch.compile(loss_module)
    save_every = r.save_every or r.eval_every
    c = model.config
    model.train()
    bar = tqdm(
        total=o.max_steps,
        initial=progress.step,
        desc="training",
        unit="step",
        disable=not env.is_main,
        dynamic_ncols=True,
    )
    window = Window()
    session_start = time.perf_counter() - progress.elapsed
    stop = _finished(progress, config)  # a resumed run may have ended already: then it takes no step
    while not stop and progress.epoch < o.max_epochs:
        train_examples = train_set.epoch(progress.epoch)  # re-noised each epoch when data.noise is on
        mine = epoch_batches(train_examples, o, env, progress.epoch)
        guided = o.guided_alignment.enabled
        if guided and env.is_main:  # a pair without links: its source was noised, or eflomal found none
            linked = sum(bool(e.links) for e in train_examples)
            log.info(
                "guided alignment: %d of %d pairs carry links in epoch %d", linked, len(train_examples), progress.epoch
            )
        while not stop and progress.batch_in_epoch + o.accumulate <= len(mine):
            chunk = mine[progress.batch_in_epoch : progress.batch_in_epoch + o.accumulate]
            micro = [collate([train_examples[i] for i in idx], c.pad_id, c.bos_id, guided) for idx in chunk]
            progress.step += 1
            if progress.step > o.warmup_steps and progress.warmup_elapsed < 0:
                progress.warmup_elapsed = progress.elapsed
            # Wall-clock time differs between processes: average it so that every rank uses the same lr.
            time_progress = all_reduce_sum(time_budget_progress(progress, o), env) / env.world_size
            loss, nll, align, tokens = train_step(
                loss_module, optimizer, micro, config, env, progress.step, time_progress
            )
            progress.batch_in_epoch += o.accumulate
            progress.tokens += tokens
            progress.elapsed = time.perf_counter() - session_start
            window.steps, window.tokens = window.steps + 1, window.tokens + tokens
            window.loss, window.nll, window.align = window.loss + loss, window.nll + nll, window.align + align
            window.lr = optimizer.param_groups[0]["lr"]
            bar.update(1)
            if progress.step % r.log_every == 0:
                _log_train(window, progress, o, env, metrics, bar)
                window = Window()
            out_of_time = o.max_minutes > 0 and any_rank(progress.elapsed > o.max_minutes * 60, env)
            last_batch = progress.epoch == o.max_epochs - 1 and progress.batch_in_epoch + o.accumulate > len(mine)
            stop = progress.step >= o.max_steps or out_of_time or last_batch
            if progress.step % r.eval_every == 0 or stop:
                stop = (
                    _evaluate(model, tokenizer, dev_examples, dev_pairs, config, env, run_dir, progress, metrics)
                    or stop
                )
            if progress.step % save_every == 0 or stop:
                _save(model, optimizer, config, env, run_dir, progress)
        if not stop:
            progress.epoch += 1
            progress.batch_in_epoch = 0
    if window.steps:  # the last steps before an early or epoch-limit stop
        _log_train(window, progress, o, env, metrics, bar)
    bar.close()
    return progress


def epoch_batches(examples: list[Example], o: OptimConfig, env: Env, epoch: int) -> list[list[int]]:
    """This process's batches of ``epoch`` (the same number on every process), in training order."""
    batches = batch_indices(examples, o.max_tokens, o.seed, epoch)
    mine = batches[env.rank :: env.world_size][: len(batches) // env.world_size]
    if not mine:
        raise ValueError(
            f"{len(examples)} examples make {len(batches)} batches: too few for {env.world_size} processes"
        )
    return mine


def _finished(progress: Progress, config: TrainConfig) -> bool:
    """Whether the run has reached its step or time limit or has stopped early."""
    o, r = config.optim, config.run
    out_of_time = 0 < o.max_minutes * 60 < progress.elapsed
    return progress.step >= o.max_steps or out_of_time or 0 < r.patience <= progress.evals_without_improvement


def _log_train(window: Window, progress: Progress, o: OptimConfig, env: Env, metrics: MetricsLog, bar: tqdm) -> None:
    """One ``kind="train"`` record: loss and NLL per target token over all processes since the last record."""
    seconds = time.perf_counter() - window.start
    tokens = all_reduce_sum(window.tokens, env)
    record = {
        "step": progress.step,
        "epoch": progress.epoch,
        "loss": all_reduce_sum(window.loss, env) / max(1, tokens),
        "nll": all_reduce_sum(window.nll, env) / max(1, tokens),
        "lr": window.lr,
        "tokens_per_s": tokens / max(seconds, 1e-9),
        "elapsed_s": progress.elapsed,
        "max_steps": o.max_steps,
    }
    if o.guided_alignment.enabled:  # per target token, like loss: KL of the supervised head's rows, summed
        record["align_loss"] = all_reduce_sum(window.align, env) / max(1, tokens)
    metrics.write(kind=TRAIN_RECORD, **record)
    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}", tok_s=f"{record['tokens_per_s']:.0f}")


def _evaluate(
    model: Transformer,
    tokenizer: Tokenizer,
    dev_examples: list[Example],
    dev_pairs: list[Pair],
    config: TrainConfig,
    env: Env,
    run_dir: Path,
    progress: Progress,
    metrics: MetricsLog,
) -> bool:
    """Dev loss and BLEU (all processes share the work), best model on rank 0; returns True to stop early."""
    r = config.run
    dev_loss = evaluate_loss(model, dev_examples, config, env)
    improved = dev_loss < progress.best_dev_loss
    progress.best_dev_loss = min(progress.best_dev_loss, dev_loss)
    progress.evals_without_improvement = 0 if improved else progress.evals_without_improvement + 1
    record = {
        "step": progress.step,
        "epoch": progress.epoch,
        "dev_loss": dev_loss,
        "dev_ppl": math.exp(min(dev_loss, 50)),
        "elapsed_s": progress.elapsed,
    }
    scores = None
    if r.dev_bleu_sentences > 0 and dev_pairs:
        scores = dev_scores(model, tokenizer, dev_pairs[: r.dev_bleu_sentences], env)
    if scores is not None:
        record.update(dev_bleu=scores["bleu"], dev_chrf=scores["chrf"])
    if env.is_main:
        metrics.write(kind=EVAL_RECORD, **record)
        bleu = f", dev BLEU {record['dev_bleu']:.1f}" if "dev_bleu" in record else ""
        tqdm.write(f"step {progress.step}: dev loss {dev_loss:.3f}{bleu}")
        if improved:
            save_model(model, run_dir / BEST_DIR)
    return r.patience > 0 and progress.evals_without_improvement >= r.patience


def _save(
    model: Transformer,
    optimizer: torch.optim.Optimizer,
    config: TrainConfig,
    env: Env,
    run_dir: Path,
    progress: Progress,
) -> None:
    """Snapshot for averaging and the full training state (every process's RNG); rank 0 writes."""
    rngs = all_gather(checkpoint.rng_states(), env)
    if env.is_main:
        keep = max(config.run.keep_checkpoints, config.run.average_last)
        checkpoint.save_checkpoint(run_dir, model, progress.step, keep)
        checkpoint.save_state(run_dir, model, optimizer, dataclasses.asdict(progress), rngs)
