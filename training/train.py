"""``python -m training.train``: prepare data, train, pick the final model, score it on the test split."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

import torch

from data.batch import TrainingSet, batch_indices, encode_pairs, padding_fraction
from data.corpus import CorpusError, Pair, detect_format, read_pairs_file
from data.tokenizer import Tokenizer, TokenizerError
from model.config import SPECIAL_IDS, ConfigError, ModelConfig
from model.grow import GROWABLE, check_growable, grow
from model.run_dir import (
    AVERAGED_DIR,
    BEST_DIR,
    CONFIG_FILE,
    METRICS_LOG_FILE,
    RESULT_FILE,
    RUN_LOCK_FILE,
    TEST_HYPOTHESES_FILE,
    TRAIN_CONFIG_FILE,
    WEIGHTS_FILE,
    split_file,
)
from model.transformer import Transformer
from model.weights import ModelLoadError, load_weights, save_model
from training import checkpoint, distributed
from training.evaluate import test_scores
from training.guided_alignment import check_aligner, read_alignments
from training.metrics import MetricsLog
from training.outputs import OutputError, check_run_dir, check_target
from training.prepare import SPLITS, Mixer, prepare_data
from training.progress import Progress
from training.run_lock import RunLocked, acquire
from training.train_config import TrainConfig, load_train_config, read_saved_config
from training.trainer import DevSet, RunContext, evaluate_nll, train
from translate.translator import Translator

log = logging.getLogger("training")
RESUME_OVERRIDES = ("optim.max_steps", "optim.max_epochs", "optim.max_minutes")  # besides run.*: may change on --resume


def model_config(config: TrainConfig, tokenizer: Tokenizer) -> ModelConfig:
    """The preset's model shape with what only the tokenizer knows: vocabulary sizes, sharing, special ids."""
    return dataclasses.replace(
        config.model,
        src_vocab_size=tokenizer.src.get_piece_size(),
        tgt_vocab_size=tokenizer.tgt.get_piece_size(),
        share_embeddings=config.model.share_embeddings and tokenizer.joint,
        **{name: getattr(tokenizer.tgt, name)() for name in SPECIAL_IDS},  # SentencePiece's pad_id(), unk_id(), ...
    )


def finish(
    model: Transformer,
    tokenizer: Tokenizer,
    run: RunContext,
    dev_examples: list,
    test_pairs: list[Pair],
    progress: Progress,
) -> dict:
    """Final model = best-by-dev-loss or the average of the last N snapshots, whichever has lower dev loss; the
    result says which, with its steps, and why training stopped."""
    config, env, run_dir = run.config, run.env, run.run_dir
    candidates = {BEST_DIR: run_dir / BEST_DIR}
    alone = dataclasses.replace(env, rank=0, world_size=1)  # rank 0 finishes while the others exit
    if config.run.average_last > 0:
        snapshots = checkpoint.snapshots(run_dir)[-config.run.average_last :]
        averaged_steps = [checkpoint.snapshot_step(p) for p in snapshots]
        log.info("averaging %d checkpoints: %s", len(snapshots), ", ".join(p.name for p in snapshots))
        averaged = checkpoint.average_checkpoints(snapshots)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(averaged[name])
        save_model(model, run_dir / AVERAGED_DIR)
        candidates[AVERAGED_DIR] = run_dir / AVERAGED_DIR
    dev_losses = {}
    for name, path in candidates.items():
        load_weights(model, path / WEIGHTS_FILE)
        dev_losses[name] = evaluate_nll(model, dev_examples, config, alone)[0]
    chosen = min(dev_losses, key=dev_losses.get)
    load_weights(model, candidates[chosen] / WEIGHTS_FILE)
    model.eval()
    save_model(model, run_dir)
    tests, hyps = test_scores(Translator(model, tokenizer), test_pairs, progress=True)
    (run_dir / TEST_HYPOTHESES_FILE).write_text("\n".join(hyps) + "\n", encoding="utf-8")
    kept = {"checkpoint": chosen, "dev_loss": dev_losses[chosen], "last_step": progress.step}
    kept |= {"best_step": progress.best_step} if chosen == BEST_DIR else {"steps": averaged_steps}
    result = {"final": chosen, "dev_loss": dev_losses, "kept": kept, "stopped": progress.stopped, **tests}
    (run_dir / RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n")
    return result


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m training.train",
        description="Train a Transformer translation model. Extra --section.key=value arguments override the preset.",
    )
    parser.add_argument("--config", type=Path, default=Path("configs/small.toml"), help="TOML preset")
    parser.add_argument("--corpus", action="append", default=[], help="parallel corpus file (repeatable)")
    parser.add_argument("--out", type=Path, required=True, help="run directory (becomes the model directory)")
    parser.add_argument(
        "--init-from",
        type=Path,
        help="start from this model directory's tokenizer, shape and weights (same as --run.init_from=DIR)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue exactly from the run's last saved state, with its saved configuration",
    )
    args, rest = parser.parse_known_args(argv)
    bad = [a for a in rest if not (a.startswith("--") and "." in a.split("=")[0] and "=" in a)]
    if bad:
        parser.error(f"unrecognised arguments {bad}: overrides look like --optim.lr=5e-4")
    overrides = [a[2:] for a in rest]
    if args.init_from:
        overrides.append(f"run.init_from={args.init_from}")
    return args, overrides


def resume_config(run_dir: Path, overrides: list[str]) -> TrainConfig:
    """The run's saved configuration; overrides may restate it but change only run.* and the training limits."""
    if not os.path.lexists(run_dir / checkpoint.STATE_FILE):  # a FIFO or a link there is refused below, by name
        stopped_early = (run_dir / METRICS_LOG_FILE).exists() or (run_dir / TRAIN_CONFIG_FILE).exists()
        raise ConfigError(
            f"{run_dir / checkpoint.STATE_FILE}: no training state to resume from"
            + ("; the run ended before its first save: start it again without --resume" if stopped_early else "")
        )
    check_run_dir(run_dir, resume=True)  # a FIFO, a link or a folder where the run writes a file: one line, no hang
    path = run_dir / TRAIN_CONFIG_FILE
    checkpoint.load_state(run_dir, mmap=True)  # a damaged state is refused now, before the data is prepared
    saved, config = read_saved_config(path), read_saved_config(path, overrides)
    for section in ("data", "model", "optim"):
        for name, value in dataclasses.asdict(getattr(config, section)).items():
            key = f"{section}.{name}"
            if key not in RESUME_OVERRIDES and value != dataclasses.asdict(getattr(saved, section))[name]:
                raise ConfigError(
                    f"--resume cannot change {key} (the run used {getattr(getattr(saved, section), name)!r}); "
                    f"only run.* and {', '.join(RESUME_OVERRIDES)} may change"
                )
    return config


def new_config(args: argparse.Namespace, overrides: list[str]) -> TrainConfig:
    """Preset + overrides + ``--corpus``, for a run directory that holds no run yet."""
    config = load_train_config(args.config, overrides)
    if args.corpus:
        config = dataclasses.replace(config, data=dataclasses.replace(config.data, corpora=tuple(args.corpus)))
    if config.model.src_vocab_size or config.model.tgt_vocab_size:
        raise ConfigError("model.src_vocab_size/tgt_vocab_size come from the tokenizer: set data.vocab_size instead")
    if not config.data.corpora:
        raise ConfigError("no corpus: pass --corpus FILE (repeatable) or set data.corpora")
    for corpus in config.data.corpora:  # missing, a folder or a FIFO: refused before the run folder is made
        detect_format(Path(corpus), config.data.src_lang, config.data.tgt_lang)
    if config.optim.guided_alignment.enabled:
        check_aligner()
    check_run_dir(args.out)  # someone's folder: never written into
    if (args.out / checkpoint.STATE_FILE).exists() or (args.out / RESULT_FILE).exists():
        raise ConfigError(f"{args.out} already holds a training run: continue it with --resume, or choose a new --out")
    if (args.out / METRICS_LOG_FILE).exists():  # killed before its first save: nothing to resume, start afresh
        log.warning("%s: the earlier run ended before its first save; starting it again from the beginning", args.out)
    if config.run.init_from:
        shape = parent_shape(Path(config.run.init_from), overrides, config.data.case_markup, config.model)
        config = dataclasses.replace(config, model=shape)
    return config


def parent_shape(
    parent: Path, overrides: list[str], case_markup: bool = False, asked: ModelConfig | None = None
) -> ModelConfig:
    """With run.init_from, the model's shape is the parent's: a --model.* override would contradict its weights,
    except more layers (model/grow.py: the parent's layers are kept and new ones start as zeroed copies)."""
    changed = [item.split("=")[0] for item in overrides if item.startswith("model.")]
    fixed = [key for key in changed if key.removeprefix("model.") not in GROWABLE]
    if fixed:
        raise ConfigError(
            f"{', '.join(fixed)}: the model's shape comes from run.init_from ({parent / CONFIG_FILE}); only "
            f"{' and '.join(f'model.{n}' for n in GROWABLE)} may grow"
        )
    if not (parent / WEIGHTS_FILE).is_file():
        raise ConfigError(f"run.init_from: {parent / WEIGHTS_FILE} not found (expected a model directory)")
    try:
        tokenizer = Tokenizer.load(parent)
    except TokenizerError as err:
        raise ConfigError(f"run.init_from: {err}") from None
    if tokenizer.case_markup and not case_markup:
        raise ConfigError(f"run.init_from: {parent} reads its source with case markup; set data.case_markup = true")
    shape = ModelConfig.from_json_file(parent / CONFIG_FILE)
    if asked is None or not changed:
        return shape
    grown = dataclasses.replace(
        shape, **{name: getattr(asked, name) for name in GROWABLE if f"model.{name}" in changed}
    )
    check_growable(shape, grown)
    return grown


def main(argv: list[str] | None = None, mix: Mixer | None = None) -> int:
    args, overrides = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    run_dir: Path = args.out
    lock, created, new_lock = None, not run_dir.exists(), not (run_dir / RUN_LOCK_FILE).exists()
    try:
        check_target(run_dir, "--out")
        if distributed.launched_rank() == 0:  # one writer per run directory: rank 0 holds it for all ranks
            lock = acquire(run_dir)
        config = resume_config(run_dir, overrides) if args.resume else new_config(args, overrides)
        distributed.check_machine(config.run)  # a device this machine lacks, too many threads: before the work
    except (ConfigError, CorpusError, ModelLoadError, OutputError, RunLocked, OSError, checkpoint.StateError) as err:
        message = f"{run_dir}: {err.strerror or err}" if isinstance(err, OSError) else str(err)
        print(f"error: {message}", file=sys.stderr)
        if lock is not None:  # never left held, nor a lock file or an empty folder made by this command
            lock.release()
            if new_lock:
                (run_dir / RUN_LOCK_FILE).unlink(missing_ok=True)
            if created and run_dir.is_dir() and not any(run_dir.iterdir()):
                run_dir.rmdir()
        return 2
    try:
        status = train_in(run_dir, config, args.resume, mix)
        if status == 2 and created and lock is not None and not (run_dir / METRICS_LOG_FILE).exists():
            shutil.rmtree(run_dir, ignore_errors=True)  # its data refused before training began: nothing left
        return status
    except checkpoint.StateError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        if err.errno not in checkpoint.FULL_DISK:
            raise
        print(f"error: {checkpoint.disk_full_message(run_dir, err)}", file=sys.stderr)
        return 2
    finally:
        if lock is not None:
            lock.release()


def train_in(run_dir: Path, config: TrainConfig, resume: bool, mix: Mixer | None = None) -> int:
    """Prepare the data (a new run), train and finish, on every rank."""
    env = distributed.setup(config.run)
    finished = False
    try:
        failed = False
        if env.is_main:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / TRAIN_CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
            try:
                if not resume:
                    parent = Path(config.run.init_from) if config.run.init_from else None
                    parent_tokenizer = Tokenizer.load(parent) if parent else None
                    align = config.optim.guided_alignment.enabled
                    prepare_data(config.data, run_dir, parent_tokenizer, align, parent, mix)
            except (CorpusError, TokenizerError) as err:
                print(f"error: {err}", file=sys.stderr)
                failed = True
        # Every process learns that rank 0 failed (no hang at a barrier).
        status = 2 if distributed.any_rank(failed, env) else run(config, env, run_dir, resume)
        finished = True
        return status
    finally:
        distributed.teardown(env, wait_for_all=finished)


def build_model(config: TrainConfig, tokenizer: Tokenizer, env: distributed.Env, resume: bool) -> Transformer:
    """The preset's model with the tokenizer's sizes, seeded; the parent's weights with run.init_from (not on
    --resume: the saved state holds newer ones). Raises ModelLoadError when the parent's weights do not fit."""
    torch.manual_seed(config.optim.seed)
    model = Transformer(model_config(config, tokenizer))
    if config.run.init_from and not resume:
        # data.case_markup on a parent without it: the vocabulary gained the mark, one embedding row more.
        parent = Path(config.run.init_from)
        layers = {name: getattr(ModelConfig.from_json_file(parent / CONFIG_FILE), name) for name in GROWABLE}
        shape = dataclasses.replace(model.config, **layers)
        smaller = Transformer(shape) if shape != model.config else model
        load_weights(smaller, parent / WEIGHTS_FILE, new_rows=config.data.case_markup)
        if smaller is not model:
            model = grow(smaller, model.config)
            log.info("grown from the parent's %s layers (new layers: zeroed copies, model/grow.py)", layers)
        log.info("initial weights: %s", parent / WEIGHTS_FILE)
    model = model.to(env.device)
    log.info(
        "model: %.2fM parameters on %s (%s), %d process(es)",
        model.num_parameters() / 1e6,
        env.device,
        env.autocast_dtype or "fp32",
        env.world_size,
    )
    return model


def log_data(train_set: TrainingSet, config: TrainConfig, model: Transformer) -> None:
    """What the batches waste on padding, and which head guided alignment teaches."""
    o, guided = config.optim, config.optim.guided_alignment
    examples = train_set.epoch(0)
    bucketed = padding_fraction(examples, batch_indices(examples, o.max_tokens, o.seed, 0))
    plain = padding_fraction(examples, batch_indices(examples, o.max_tokens, o.seed, 0, bucketing=False))
    log.info("padding fraction: %.1f%% with bucketing, %.1f%% without", 100 * bucketed, 100 * plain)
    if guided.enabled:
        layer = range(model.config.n_decoder_layers)[guided.layer] + 1
        log.info(
            "guided alignment: weight %g on decoder layer %d, head %d (1-based, as the alignment bench names them)",
            guided.weight,
            layer,
            guided.head + 1,
        )


def run(config: TrainConfig, env: distributed.Env, run_dir: Path, resume: bool) -> int:
    """Train on the prepared run directory, then (rank 0) pick and score the final model."""
    tokenizer = Tokenizer.load(run_dir)
    parts = {name: read_pairs_file(split_file(run_dir, name)) for name in SPLITS}
    try:
        model = build_model(config, tokenizer, env, resume)
    except ModelLoadError as err:
        print(f"error: run.init_from: {err}", file=sys.stderr)
        return 2
    if env.is_main:
        (run_dir / CONFIG_FILE).write_text(model.config.to_json())
    max_len = min(config.data.max_len, model.config.max_positions)
    d, guided = config.data, config.optim.guided_alignment
    links = read_alignments(run_dir, len(parts["train"])) if guided.enabled else None
    seed = config.optim.seed
    train_set = TrainingSet(parts["train"], tokenizer, max_len, d.noise, d.sampling_alpha, seed, links, d.entities)
    dev = DevSet(encode_pairs(parts["dev"], tokenizer, max_len), parts["dev"])
    if env.is_main:
        log_data(train_set, config, model)
    start = time.perf_counter()
    run_context = RunContext(config, env, run_dir, MetricsLog(run_dir / METRICS_LOG_FILE, env.is_main))
    progress = train(model, tokenizer, train_set, dev, run_context, resume)
    if env.world_size > 1:
        identical, digests = distributed.ranks_identical(model, env)
        log.info(
            "rank %d of %d: weights sha256 %s; ranks identical: %s",
            env.rank,
            env.world_size,
            digests[env.rank][:16],
            identical,
        )
    if env.is_main:
        result = finish(model, tokenizer, run_context, dev.examples, parts["test"], progress)
        t = result["test_greedy"]
        log.info(
            "done: %d steps in %.0f s; final=%s; test BLEU %.2f chrF %.2f (%s)",
            progress.step,
            time.perf_counter() - start,
            result["final"],
            t["bleu"],
            t["chrf"],
            t["bleu_signature"],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
