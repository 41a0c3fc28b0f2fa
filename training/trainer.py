"""The training loop, built from small pieces: lr_at, TranslationLoss, train_step, evaluate_nll, dev_scores."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from data.batch import Batch, Example, TrainingSet, batch_indices, collate
from data.corpus import Pair
from data.tokenizer import Tokenizer
from model.loss import token_loss
from model.run_dir import BEST_DIR, EVAL_RECORD
from model.transformer import Transformer
from model.weights import save_model
from training import checkpoint
from training.distributed import Env, all_gather, all_reduce_sum, any_rank
from training.evaluate import corpus_scores
from training.guided_alignment import alignment_loss
from training.metrics import MetricsLog, Window, log_train
from training.probes import probe_examples, record_probes
from training.progress import Progress, stop_reason, time_budget_progress
from training.train_config import GuidedAlignmentConfig, OptimConfig, TrainConfig
from translate.translator import Translator

log = logging.getLogger("training")
Report = Callable[[int, int], None]  # (sentences done, sentences in all) of a dev evaluation
TRANSLATE_BATCH = 64  # dev sentences translated between two reports (translate_many's own batch)


def lr_at(step: int, optim: OptimConfig, time_progress: float = 0.0) -> float:
    """Learning rate for optimizer step ``step`` (1-based): linear warmup, then the chosen decay.
    ``time_progress`` (0..1, see ``time_budget_progress``) lets a cosine schedule end with a minutes budget: the decay
    follows whichever is further along, steps or wall-clock time."""
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
    """model/loss.py's loss summed over the real target tokens; given guided alignment's targets it also scores the
    supervised head (training/guided_alignment.py)."""

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
        layer = None if alignment is None else self.guided.layer
        loss, nll, _, cross = token_loss(self.model, src, tgt_in, tgt_out, self.label_smoothing, layer)
        if alignment is None:
            return loss.sum(), nll.sum(), loss.new_zeros(())
        return loss.sum(), nll.sum(), alignment_loss(cross[layer][:, self.guided.head], alignment)  # (B, T, S) rows


def train_step(
    loss_module: nn.Module,
    optimizer: torch.optim.Optimizer,
    micro_batches: list[Batch],
    run: RunContext,
    step: int,
    time_progress: float = 0.0,
) -> tuple[float, float, float, int]:
    """One optimizer step over ``micro_batches`` (gradient accumulation); returns (loss, nll, alignment loss,
    tokens) summed; the objective is loss + guided_alignment.weight × alignment loss."""
    config, env = run.config, run.env
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, config.optim, time_progress)
    local_tokens = sum(b.n_tgt_tokens for b in micro_batches)
    total_tokens = all_reduce_sum(local_tokens, env)
    weight = config.optim.guided_alignment.weight
    loss_sum = nll_sum = align_sum = 0.0
    ddp = isinstance(loss_module, DistributedDataParallel)
    for i, batch in enumerate(micro_batches):
        batch = batch.to(env.device)
        last = i == len(micro_batches) - 1
        # Gradients are all-reduced once per optimizer step, on the last micro-batch.
        with loss_module.no_sync() if ddp and not last else contextlib.nullcontext():
            with env.autocast():
                loss, nll, align = loss_module(batch.src, batch.tgt_in, batch.tgt_out, batch.alignment)
            # DDP averages gradients over processes: × world_size / all processes' tokens is a per-token mean.
            scaled = (loss + weight * align) * env.world_size / total_tokens
            scaled.backward()
        loss_sum += float(loss.detach())
        nll_sum += float(nll)
        align_sum += float(align.detach())
    if config.optim.clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(loss_module.parameters(), config.optim.clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, align_sum, local_tokens


@torch.inference_mode()
def evaluate_nll(
    model: Transformer, examples: list[Example], config: TrainConfig, env: Env, report: Report | None = None
) -> tuple[float, float]:
    """(mean per-token NLL, its noise: the standard error of the mean of the sentences' per-token NLL) on
    ``examples``, in eval mode; with several processes each takes a share. The noise says how much the dev loss
    moves by the luck of which sentences the dev set holds: a change smaller than it is no change. ``report`` is
    told the sentences done (this process's share, times the processes) after each batch."""
    was_training = model.training
    model.eval()
    shard = examples[env.rank :: env.world_size]
    nll_sum = tokens = 0.0
    per_sentence: list[float] = []
    c = model.config
    for indices in batch_indices(shard, config.optim.max_tokens, 0, 0, bucketing=True, shuffle=False):
        batch = collate([shard[i] for i in indices], c.pad_id, c.bos_id).to(env.device)
        with env.autocast():
            _, token_nll, real, _ = token_loss(model, batch.src, batch.tgt_in, batch.tgt_out)
        sums = token_nll.new_zeros(real.shape[0]).index_add_(0, real.nonzero()[:, 0], token_nll)  # (B,)
        per_sentence += (sums / real.sum(dim=1).clamp(min=1)).tolist()
        nll_sum += float(token_nll.sum())
        tokens += batch.n_tgt_tokens
        if report is not None:
            report(min(len(examples), len(per_sentence) * env.world_size), len(examples))
    model.train(was_training)
    losses = [loss for shard_losses in all_gather(per_sentence, env) for loss in shard_losses]
    noise = statistics.stdev(losses) / math.sqrt(len(losses)) if len(losses) > 1 else 0.0
    return all_reduce_sum(nll_sum, env) / max(1.0, all_reduce_sum(tokens, env)), noise


def dev_scores(
    model: Transformer, tokenizer: Tokenizer, pairs: list[Pair], env: Env, report: Report | None = None
) -> dict[str, Any] | None:
    """Greedy dev BLEU/chrF: each process translates its share, rank 0 scores all (others get None); ``report`` is
    told the sentences translated after each batch of them."""
    was_training = model.training
    shard = pairs[env.rank :: env.world_size]
    translator, hyps = Translator(model, tokenizer), []
    for start in range(0, len(shard), TRANSLATE_BATCH):
        hyps += translator.translate_many([p.src for p in shard[start : start + TRANSLATE_BATCH]])
        if report is not None:
            report(min(len(pairs), len(hyps) * env.world_size), len(pairs))
    model.train(was_training)
    shards = all_gather(hyps, env)
    if not env.is_main:
        return None
    merged = [shards[i % env.world_size][i // env.world_size] for i in range(len(pairs))]
    return corpus_scores(merged, [p.tgt for p in pairs])


def make_optimizer(model: Transformer, optim: OptimConfig) -> torch.optim.AdamW:
    """AdamW; no weight decay on biases, norms and embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.dim() < 2 or "embed" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=optim.lr, betas=tuple(optim.betas))


def resume_from(run: RunContext, model: Transformer, optimizer: torch.optim.Optimizer) -> Progress:
    """Load weights, optimizer, progress and this process's RNG; forget what a killed run logged after the state,
    and write the state's snapshot when a kill cut it short (the state is saved first: ``save_state``)."""
    run_dir, env, metrics = run.run_dir, run.env, run.metrics
    state = checkpoint.load_state(run_dir)
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        progress, rng = Progress(**state["progress"]), state["rng"]
    except (RuntimeError, TypeError, KeyError) as err:  # a state of another model, or damaged
        raise checkpoint.state_error(run_dir, err) from None
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
        if not checkpoint.snapshot_path(run_dir, progress.step).is_dir():
            checkpoint.save_checkpoint(run_dir, model, progress.step, run.config.run.kept_snapshots)
    log.info("resumed at step %d (epoch %d, batch %d)", progress.step, progress.epoch, progress.batch_in_epoch)
    return progress


@dataclass(frozen=True)
class RunContext:
    """What every piece of one training run needs: its configuration, its processes, its folder, its metrics."""

    config: TrainConfig
    env: Env
    run_dir: Path
    metrics: MetricsLog


@dataclass(frozen=True)
class DevSet:
    examples: list[Example]  # encoded, for the dev loss
    pairs: list[Pair]  # as text, for dev BLEU


@dataclass(frozen=True)
class Session:
    """One process's training objects, built once by ``train``."""

    model: Transformer
    tokenizer: Tokenizer
    optimizer: torch.optim.Optimizer
    loss_module: nn.Module
    dev: DevSet
    run: RunContext
    bar: tqdm


def loss_for(model: Transformer, run: RunContext) -> nn.Module:
    """The loss module the steps call: compiled if asked, then wrapped in DDP with several processes (nanoGPT's
    order: DDP stays the outer module, so the step can ask it not to sync)."""
    o = run.config.optim
    loss_module: nn.Module = TranslationLoss(model, o.label_smoothing, o.guided_alignment)
    if run.config.run.compile:
        loss_module = torch.compile(loss_module)
    if run.env.world_size > 1:
        device_ids = [run.env.device.index] if run.env.device.type == "cuda" else None
        loss_module = DistributedDataParallel(loss_module, device_ids=device_ids)
    return loss_module


def train(
    model: Transformer, tokenizer: Tokenizer, train_set: TrainingSet, dev: DevSet, run: RunContext, resume: bool
) -> Progress:
    """Train until ``stop_reason`` says so (steps, minutes, epochs, patience); rank 0 writes checkpoints and
    metrics."""
    o = run.config.optim
    optimizer = make_optimizer(model, o)
    if resume:
        progress = resume_from(run, model, optimizer)
    else:
        progress = Progress()
        run.metrics.start_fresh()
    run.metrics.evaluated()  # an evaluation a stop cut short is not running now
    bar = tqdm(
        total=o.max_steps,
        initial=progress.step,
        desc="training",
        unit="step",
        dynamic_ncols=True,
        disable=not run.env.is_main,
    )
    session = Session(model, tokenizer, optimizer, loss_for(model, run), dev, run, bar)
    model.train()
    window = Window()
    start = time.perf_counter() - progress.elapsed
    stop = bool(stop_reason(progress, run.config))  # a resumed run may have ended already: then it takes no step
    try:
        while not stop and progress.epoch < o.max_epochs:
            stop = train_epoch(session, train_set, progress, window, start)
            if not stop:
                progress.epoch += 1
                progress.batch_in_epoch = 0
    finally:
        bar.close()  # also when a save fails: the error's line then starts a line of its own
    return progress


def train_epoch(s: Session, train_set: TrainingSet, progress: Progress, window: Window, start: float) -> bool:
    """The rest of epoch ``progress.epoch``, one optimizer step at a time; True when training stops."""
    o, env = s.run.config.optim, s.run.env
    examples = train_set.epoch(progress.epoch)  # re-noised each epoch when data.noise is on
    mine = epoch_batches(examples, o, env, progress.epoch)
    progress.epoch_batches = len(mine)
    guided = o.guided_alignment.enabled
    if guided and env.is_main:  # a pair without links: its source was noised, or eflomal found none
        linked = sum(bool(e.links) for e in examples)
        log.info("guided alignment: %d of %d pairs carry links in epoch %d", linked, len(examples), progress.epoch)
    c = s.model.config
    while progress.batch_in_epoch + o.accumulate <= len(mine):
        chunk = mine[progress.batch_in_epoch : progress.batch_in_epoch + o.accumulate]
        micro = [collate([examples[i] for i in idx], c.pad_id, c.bos_id, guided) for idx in chunk]
        progress.step += 1
        if progress.step > o.warmup_steps and progress.warmup_elapsed < 0:
            progress.warmup_elapsed = progress.elapsed
        # Wall-clock time differs between processes: average it so that every rank uses the same lr.
        time_progress = all_reduce_sum(time_budget_progress(progress, o), env) / env.world_size
        loss, nll, align, tokens = train_step(s.loss_module, s.optimizer, micro, s.run, progress.step, time_progress)
        progress.batch_in_epoch += o.accumulate
        progress.tokens += tokens
        progress.elapsed = time.perf_counter() - start
        window.add(loss, nll, align, tokens, s.optimizer.param_groups[0]["lr"])
        s.bar.update(1)
        if after_step(s, progress, window, epoch_ended=progress.batch_in_epoch + o.accumulate > len(mine)):
            return True
    return False


def after_step(s: Session, progress: Progress, window: Window, epoch_ended: bool) -> bool:
    """Log, evaluate and save as the run's settings say; True when training stops (then all three happen)."""
    config, env = s.run.config, s.run.env
    r = config.run
    # Steps 1, 2, 4, 8… before the first whole window are logged too: a run's progress is known from its first step.
    first_window = progress.step < r.log_every and progress.step & (progress.step - 1) == 0
    if progress.step % r.log_every == 0 or first_window:
        log_train(window, progress, config.optim, env, s.run.metrics, s.bar)
        window.reset()
    reason = stop_reason(progress, config, epoch_ended)
    stop = any_rank(bool(reason), env)  # the minutes run out on one process first: all stop together
    if progress.step % r.eval_every == 0 or stop:
        evaluate_dev(s, progress)
        reason = reason or stop_reason(progress, config)  # early stopping is decided by this evaluation
        stop = stop or bool(reason)
    if progress.step % (r.save_every or r.eval_every) == 0 or stop:
        save_state(s, progress)
    if stop:
        if window.steps:  # the last steps before the stop
            log_train(window, progress, config.optim, env, s.run.metrics, s.bar)
        progress.stopped = reason or "when another process reached a limit"
        log.info("stopping at step %d: %s", progress.step, progress.stopped)
    return stop


def epoch_batches(examples: list[Example], o: OptimConfig, env: Env, epoch: int) -> list[list[int]]:
    """This process's batches of ``epoch`` (the same number on every process), in training order."""
    batches = batch_indices(examples, o.max_tokens, o.seed, epoch)
    mine = batches[env.rank :: env.world_size][: len(batches) // env.world_size]
    if not mine:
        raise ValueError(
            f"{len(examples)} examples make {len(batches)} batches: too few for {env.world_size} processes"
        )
    return mine


def evaluate_dev(s: Session, progress: Progress) -> None:
    """Dev loss and BLEU (all processes share the work), the best model so far on rank 0; updates ``progress``."""
    config, env, r = s.run.config, s.run.env, s.run.config.run
    step, metrics = progress.step, s.run.metrics
    loss_done = partial(metrics.evaluating, step, "loss")
    dev_loss, dev_loss_se = evaluate_nll(s.model, s.dev.examples, config, env, loss_done)
    improved = dev_loss < progress.best_dev_loss
    progress.best_dev_loss = min(progress.best_dev_loss, dev_loss)
    progress.best_step = progress.step if improved else progress.best_step
    progress.evals_without_improvement = 0 if improved else progress.evals_without_improvement + 1
    record = {
        "step": progress.step,
        "epoch": progress.epoch,
        "dev_loss": dev_loss,
        "dev_ppl": math.exp(min(dev_loss, 50)),
        "dev_loss_se": dev_loss_se,  # the dev set's noise (evaluate_nll): the verdict needs a change above it
        "dev_sentences": len(s.dev.examples),
        "elapsed_s": progress.elapsed,
    }
    scores = None
    if r.dev_bleu_sentences > 0 and s.dev.pairs:
        bleu_pairs = s.dev.pairs[: r.dev_bleu_sentences]
        scores = dev_scores(s.model, s.tokenizer, bleu_pairs, env, partial(metrics.evaluating, step, "bleu"))
    metrics.evaluated()
    if scores is not None:
        record.update(dev_bleu=scores["bleu"], dev_chrf=scores["chrf"])
    if env.is_main:
        s.run.metrics.write(kind=EVAL_RECORD, **record)
        bleu = f", dev BLEU {record['dev_bleu']:.1f}" if "dev_bleu" in record else ""
        tqdm.write(f"step {progress.step}: dev loss {dev_loss:.3f}{bleu}")
        if improved:
            save_model(s.model, s.run.run_dir / BEST_DIR)
        record_probes(s.model, s.tokenizer, probe_examples(s.dev.examples), s.run.run_dir, progress.step)


def save_state(s: Session, progress: Progress) -> None:
    """Snapshot for averaging and the full training state (every process's RNG); rank 0 writes."""
    rngs = all_gather(checkpoint.rng_states(), s.run.env)
    if s.run.env.is_main:
        # The state first: a disk that fills at the snapshot then leaves the new resume point and the old snapshots.
        checkpoint.save_state(s.run.run_dir, s.model, s.optimizer, dataclasses.asdict(progress), rngs)
        checkpoint.save_checkpoint(s.run.run_dir, s.model, progress.step, s.run.config.run.kept_snapshots)
