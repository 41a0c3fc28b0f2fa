"""``python -m workshop deepen``: a model folder grown deeper without training, computing what its parent computes.

``training.train --init-from`` grows a parent when its shape asks for more layers (``model/grow.py``); this writes
the grown parent on its own, so that it can be averaged with a child trained from it (``workshop.average`` needs
one shape): the mean of a grown parent and its child is a point between the two, as the mean of a parent and its
child of one shape is. The output holds the grown weights (float32), their config and the parent's tokenizer — no
split, training config or scores: it is the parent's function, not a run. Written in a new folder and renamed into
place when complete; an existing ``--out`` is replaced whole, and only when it is a model folder
(training/outputs.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from model.config import ConfigError
from model.grow import grow
from model.weights import ModelLoadError, save_model, staged_dir
from training.outputs import OutputError, check_model_dir
from translate.model_dir import load_model


def grow_folder(model: Path, out: Path, n_encoder_layers: int, n_decoder_layers: int) -> None:
    """Write ``model`` grown to ``n_encoder_layers`` + ``n_decoder_layers`` layers into ``out``."""
    check_model_dir(out, [("the parent", model)])
    parent = load_model(model)
    shape = dataclasses.replace(
        parent.model.config, n_encoder_layers=n_encoder_layers, n_decoder_layers=n_decoder_layers
    )
    grown = grow(parent.model, shape)  # raises ConfigError for fewer layers or a post-norm parent
    with staged_dir(out, "grow") as tmp:
        save_model(grown, tmp)
        parent.tokenizer.save(tmp)
        load_model(tmp)  # what we write must load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop deepen", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the parent model directory")
    parser.add_argument("--encoder-layers", type=int, required=True, help="the grown model's encoder layers")
    parser.add_argument("--decoder-layers", type=int, required=True, help="the grown model's decoder layers")
    parser.add_argument("--out", type=Path, required=True, help="the grown model's directory")
    args = parser.parse_args(argv)
    try:
        grow_folder(args.model, args.out, args.encoder_layers, args.decoder_layers)
    except (ModelLoadError, ConfigError, OutputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.out}: {args.model} grown to {args.encoder_layers}+{args.decoder_layers} layers")
    return 0
