"""``python -m training.train``: prepare data, train, pick the final model, score it on the test split."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from data.batch import batch_indices, encode_pairs, padding_fraction
from data.corpus import CorpusError, Pair
from model.config import ConfigError, ModelConfig
from model.io import load_weights, save_model
from model.tokenizer import Tokenizer
from model.transformer import Transformer
from training import checkpoint, distributed
from training.config import TrainConfig, load_train_config
from training.prepare import SPLITS, prepare_data
from training.trainer import evaluate_loss, score, train

log = logging.getLogger("training")


def read_split(path: Path) -> list[Pair]:
    return [Pair(*line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


def model_config(config: TrainConfig, tokenizer: Tokenizer) -> ModelConfig:
    return ModelConfig(
        src_vocab_size=tokenizer.src.get_piece_size(), tgt_vocab_size=tokenizer.tgt.get_piece_size(),
        share_embeddings=tokenizer.joint, **dataclasses.asdict(config.model),
    )


def finish(model: Transformer, tokenizer: Tokenizer, config: TrainConfig, env: distributed.Env, run_dir: Path,
           dev_examples: list, test_pairs: list[Pair]) -> dict:
    """Final model = best-by-dev-loss or the average of the last N snapshots, whichever has lower dev loss."""
    candidates = {"best": run_dir / "best"}
    if config.run.average_last > 0:
        snapshots = sorted((run_dir / checkpoint.CHECKPOINT_DIR).glob("step-*"))[-config.run.average_last :]
        averaged = checkpoint.average_checkpoints(snapshots)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(averaged[name])
        save_model(model, run_dir / "averaged")
        candidates["averaged"] = run_dir / "averaged"
    dev_losses = {}
    for name, path in candidates.items():
        load_weights(model, path / "model.safetensors")
        dev_losses[name] = evaluate_loss(model, dev_examples, config, env)
    chosen = min(dev_losses, key=dev_losses.get)
    load_weights(model, candidates[chosen] / "model.safetensors")
    model.eval()
    save_model(model, run_dir)
    test = score(model, tokenizer, test_pairs, progress=True)
    hyps = test.pop("hypotheses")
    (run_dir / "test.hyp").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    result = {"final": chosen, "dev_loss": dev_losses, "test_greedy": test}
    (run_dir / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m training.train",
        description="Train a Transformer translation model. Extra --section.key=value arguments override the preset.",
    )
    parser.add_argument("--config", type=Path, default=Path("configs/small.toml"), help="TOML preset")
    parser.add_argument("--corpus", action="append", default=[], help="parallel corpus file (repeatable)")
    parser.add_argument("--out", type=Path, required=True, help="run directory (becomes the model directory)")
    parser.add_argument("--resume", action="store_true", help="continue exactly from the run's last saved state")
    args, rest = parser.parse_known_args(argv)
    bad = [a for a in rest if not (a.startswith("--") and "." in a.split("=")[0] and "=" in a)]
    if bad:
        parser.error(f"unrecognised arguments {bad}: overrides look like --optim.lr=5e-4")
    return args, [a[2:] for a in rest]


def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    run_dir: Path = args.out
    try:
        if args.resume:
            config = load_train_config(None, [])
            saved = json.loads((run_dir / "train_config.json").read_text())
            from model.config import from_dict

            config = from_dict(TrainConfig, saved)
        else:
            config = load_train_config(args.config, overrides)
            if args.corpus:
                config = dataclasses.replace(config, data=dataclasses.replace(config.data, corpora=tuple(args.corpus)))
            if not config.data.corpora:
                raise ConfigError("no corpus: pass --corpus FILE (repeatable) or set data.corpora")
    except (ConfigError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    env = distributed.setup(config.run.device, config.run.precision)
    if config.run.threads > 0:
        torch.set_num_threads(config.run.threads)
    try:
        if env.is_main and not args.resume:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "train_config.json").write_text(json.dumps(config.as_dict(), indent=2) + "\n")
            try:
                prepare_data(config.data, run_dir)
            except CorpusError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
        if env.world_size > 1:
            dist.barrier()
        return run(config, env, run_dir, args.resume)
    finally:
        distributed.teardown(env)


def run(config: TrainConfig, env: distributed.Env, run_dir: Path, resume: bool) -> int:
    tokenizer = Tokenizer.load(run_dir)
    parts = {name: read_split(run_dir / "splits" / f"{name}.tsv") for name in SPLITS}
    torch.manual_seed(config.optim.seed)
    model = Transformer(model_config(config, tokenizer)).to(env.device)
    if env.is_main:
        (run_dir / "config.json").write_text(model.config.to_json())
        log.info("model: %.2fM parameters on %s (%s), %d process(es)", model.num_parameters() / 1e6, env.device,
                 env.autocast_dtype or "fp32", env.world_size)
    max_len = min(config.data.max_len, model.config.max_positions)
    train_examples = encode_pairs(parts["train"], tokenizer, max_len)
    dev_examples = encode_pairs(parts["dev"], tokenizer, max_len)
    if env.is_main:
        o = config.optim
        bucketed = padding_fraction(train_examples, batch_indices(train_examples, o.max_tokens, o.seed, 0))
        plain = padding_fraction(train_examples, batch_indices(train_examples, o.max_tokens, o.seed, 0, bucketing=False))
        log.info("padding fraction: %.1f%% with bucketing, %.1f%% without", 100 * bucketed, 100 * plain)
    start = time.perf_counter()
    progress = train(model, tokenizer, train_examples, dev_examples, parts["dev"], config, env, run_dir, resume)
    if env.is_main:
        result = finish(model, tokenizer, config, env, run_dir, dev_examples, parts["test"])
        t = result["test_greedy"]
        log.info("done: %d steps in %.0f s; final=%s; test BLEU %.2f chrF %.2f (%s)", progress.step,
                 time.perf_counter() - start, result["final"], t["bleu"], t["chrf"], t["bleu_signature"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
