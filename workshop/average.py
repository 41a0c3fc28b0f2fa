"""``python -m workshop average``: one model whose weights are the mean of several models' weights.

A "model soup" (Wortsman et al. 2022): models of one lineage (a parent and its fine-tuned children, or two cycles
of one run) averaged weight by weight often keep what each learned; checkpoint averaging within a run is the same
arithmetic. The shipped model (v12s) is the average of v10 and v12. The members must have one shape (``config.json``)
and one tokenizer (byte for byte); the output holds the float32 mean and the first member's other files (config,
tokenizer, training config, data report, split), so it is scored, gated and fine-tuned on the first member's
split; the average is scored on that split's test part (greedy, as written and typed) into ``metrics.json``, as a
training run is: read from the first member's ``splits/``, or, for a model folder without them, made again from its
training configuration (``model_split``); when neither can be had the average is written unscored, and says why.
Written in a new folder and renamed into place when complete; an existing ``--out`` is replaced whole, and only
when it is a model folder (training/outputs.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

from data.corpus import CorpusError, Pair
from data.split_record import SPLIT_RECORD_FILE
from model.config import ConfigError
from model.run_dir import CONFIG_FILE, DATA_REPORT_FILE, NAME_GUARD_FILE, RESULT_FILE, SPLITS_DIR, TRAIN_CONFIG_FILE
from model.transformer import Transformer
from model.weights import ModelLoadError, save_model, staged_dir
from training.evaluate import test_scores
from training.outputs import OutputError, check_model_dir
from training.prepare import model_split
from translate.model_dir import LoadedModel, load_model
from translate.translator import Translator

COPIED = (
    TRAIN_CONFIG_FILE,
    DATA_REPORT_FILE,
    SPLIT_RECORD_FILE,
    NAME_GUARD_FILE,
)  # from the first member, with its config, tokenizer and split (and its name guard: one corpus, one tokenizer)


def load_members(models: list[Path]) -> list[LoadedModel]:
    """Every model, loaded once; raises ModelLoadError unless they share one shape and one tokenizer."""
    if len(models) < 2:
        raise ModelLoadError("averaging needs at least two models")
    loaded = [load_model(path) for path in models]
    first = loaded[0]
    for path, other in zip(models[1:], loaded[1:], strict=True):
        if other.model.config != first.model.config:
            raise ModelLoadError(f"{path}: {CONFIG_FILE} differs from {models[0]}'s (the shapes must be equal)")
        if other.tokenizer.proto() != first.tokenizer.proto():
            raise ModelLoadError(f"{path}: its tokenizer differs from {models[0]}'s (the vocabularies must be equal)")
    return loaded


def mean_model(members: list[LoadedModel]) -> Transformer:
    """The first member's model, its parameters replaced by the float32 mean of every member's, name by name."""
    model = members[0].model
    others = [dict(m.model.named_parameters()) for m in members[1:]]
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.stack([p, *(o[name] for o in others)]).float().mean(0))
    return model


def write_test_result(averaged: LoadedModel, test: list[Pair], models: list[Path], out: Path) -> None:
    """``out/metrics.json``: the average scored on its test split, as training writes it for a run."""
    tests, _ = test_scores(Translator(averaged.model, averaged.tokenizer), test, progress=True)
    final = f"the mean of the weights of {', '.join(map(str, models))} (a model soup)"
    (out / RESULT_FILE).write_text(json.dumps({"final": final, "dev_loss": {}, **tests}, indent=2) + "\n")


def held_out_test(model_dir: Path) -> tuple[list[Pair], str]:
    """The test pairs a model was scored on (``model_split``), or none and why."""
    try:
        return model_split(model_dir).test, ""
    except (CorpusError, OSError) as err:
        return [], f"not scored: {err}"


def average(models: list[Path], out: Path) -> str:
    """Write the average of ``models`` to ``out``; returns why it was not scored on a test split ("" when it was)."""
    check_model_dir(out, [("a model averaged", m) for m in models])
    members = load_members(models)
    with staged_dir(out, "average") as tmp:
        save_model(mean_model(members), tmp)  # config.json and the weights
        members[0].tokenizer.save(tmp)
        first = models[0]
        for name in COPIED:
            if (first / name).is_file():
                shutil.copy(first / name, tmp / name)
        if (first / SPLITS_DIR).is_dir():
            shutil.copytree(first / SPLITS_DIR, tmp / SPLITS_DIR)
        averaged = load_model(tmp)  # what we write must load
        test, unscored = held_out_test(first)
        if test:
            write_test_result(averaged, test, models, tmp)
    return unscored


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop average", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", required=True, help="a model directory (repeat)")
    parser.add_argument("--out", type=Path, required=True, help="the averaged model's directory")
    args = parser.parse_args(argv)
    try:
        unscored = average(args.model, args.out)
    except (ModelLoadError, ConfigError, OutputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.out}: the mean of {', '.join(map(str, args.model))}")
    if unscored:
        print(f"{args.out}: {unscored}", file=sys.stderr)
    return 0
