"""A model directory loaded for translating: its network (config.json + model.safetensors, model/weights.py) and its
tokenizer, each checked against the other before anything is allocated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from data.tokenizer import Tokenizer, TokenizerError
from model.config import ConfigError, ModelConfig
from model.run_dir import CONFIG_FILE, WEIGHTS_FILE
from model.transformer import Transformer
from model.weights import ModelLoadError, check_shapes, expected_shapes, load_weights


@dataclass(frozen=True)
class LoadedModel:
    model: Transformer
    tokenizer: Tokenizer
    directory: Path


def load_model(directory: Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Rebuild the model from its directory in eval mode, checking every file."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelLoadError(f"{directory}: model directory not found")
    try:
        config = ModelConfig.from_json_file(directory / CONFIG_FILE)
        tokenizer = Tokenizer.load(directory)
    except (ConfigError, TokenizerError) as err:
        raise ModelLoadError(str(err)) from None
    if (
        tokenizer.src.get_piece_size() != config.src_vocab_size
        or tokenizer.tgt.get_piece_size() != config.tgt_vocab_size
    ):
        raise ModelLoadError(
            f"{directory}: tokenizer vocabulary ({tokenizer.src.get_piece_size()}/{tokenizer.tgt.get_piece_size()}) "
            f"does not match {CONFIG_FILE} ({config.src_vocab_size}/{config.tgt_vocab_size})"
        )
    check_shapes(directory / WEIGHTS_FILE, expected_shapes(config))  # before the real model allocates anything
    model = Transformer(config)
    load_weights(model, directory / WEIGHTS_FILE)
    return LoadedModel(model.to(device).eval(), tokenizer, directory)
