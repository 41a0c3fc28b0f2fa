"""A model directory loaded for translating: its network (config.json + model.safetensors, model/weights.py) and its
tokenizer, each checked against the other before anything is allocated. A run stopped before its end has no
network of its own yet: its best checkpoint so far stands in (``weights_dir``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from data.tokenizer import Tokenizer, TokenizerError
from model.bounded_read import SHOWN_PATH, cut, quoted
from model.config import ConfigError, ModelConfig
from model.run_dir import BEST_DIR, CONFIG_FILE, SNAPSHOTS_DIR, WEIGHTS_FILE
from model.transformer import Transformer
from model.weights import ModelLoadError, check_shapes, expected_shapes, load_weights


@dataclass(frozen=True)
class LoadedModel:
    model: Transformer
    tokenizer: Tokenizer
    directory: Path


MEMORY_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")  # this machine's memory
MEMORY_SHARE = 4  # one model may take a quarter of it to load: a server holds several, and its sessions
LOAD_BYTES = 8  # per float while loading: the model's float32 copy and the file's tensors
MODEL_FILES = (CONFIG_FILE, WEIGHTS_FILE)  # the network's two files; the tokenizer lies beside them


def holds_network(folder: Path) -> bool:
    """True when ``folder`` has the network's two files (config.json and model.safetensors)."""
    return all((folder / name).is_file() for name in MODEL_FILES)


def weights_dir(directory: Path) -> Path:
    """Where the network of ``directory`` is: the folder itself (a finished run, an exported model), else, for a run
    stopped before its end, its best checkpoint so far (``best/``), else its newest snapshot (``checkpoints/``,
    written at each save, which may come before the first evaluation); the folder itself when none holds one."""
    directory = Path(directory)
    if holds_network(directory):
        return directory
    snapshots = sorted((directory / SNAPSHOTS_DIR).glob("step-*"))  # step-0000050: the name sorts by step
    return next((f for f in (directory / BEST_DIR, *reversed(snapshots)) if holds_network(f)), directory)


def network_config(network: Path) -> ModelConfig:
    """The checked ``config.json`` of a network folder (read bounded), when its model fits this machine's memory:
    said in one line before anything is allocated."""
    try:
        config = ModelConfig.from_json_file(network / CONFIG_FILE)
    except ConfigError as err:
        raise ModelLoadError(str(err)) from None
    need, allowed = config.n_elements * LOAD_BYTES, MEMORY_BYTES // MEMORY_SHARE
    if need > allowed:
        raise ModelLoadError(
            f"{network / CONFIG_FILE}: a model of {config.n_elements:,} parameters needs about {need / 2**30:.1f} GB "
            f"to load; expected at most {allowed / 2**30:.1f} GB here (1/{MEMORY_SHARE} of this machine's memory)"
        )
    return config


def machine_devices() -> list[str]:
    """The devices this machine and its PyTorch build have: the CPU, each CUDA GPU, Apple's MPS."""
    cuda = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    mps = getattr(torch.backends, "mps", None)
    return ["cpu", *cuda, *(["mps"] if mps is not None and mps.is_available() else [])]


def check_device(device: str | torch.device, setting: str = "device") -> None:
    """ModelLoadError naming ``setting``, before anything is loaded, unless ``device`` is one of ``machine_devices``
    ("cuda" without a number: any GPU): never ``meta`` (no data) nor a backend this build lacks."""
    has = machine_devices()
    try:
        known = str(torch.device(device))
    except (RuntimeError, ValueError, TypeError):
        known = ""
    if not (known.startswith("cpu") or any(known in (d, d.split(":")[0]) for d in has)):
        raise ModelLoadError(f"{setting} {quoted(str(device))}: not one this machine has (expected {', '.join(has)})")


def load_model(directory: Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Rebuild the model from its directory in eval mode, checking every file."""
    check_device(device)
    directory = Path(directory)
    if not os.path.isdir(directory):  # False, never an OSError, for a name too long for the file system
        raise ModelLoadError(f"{cut(str(directory), SHOWN_PATH)}: model directory not found")
    network = weights_dir(directory)
    config = network_config(network)
    try:
        tokenizer = Tokenizer.load(directory)
    except TokenizerError as err:
        raise ModelLoadError(str(err)) from None
    sizes = (tokenizer.src.get_piece_size(), tokenizer.tgt.get_piece_size())
    if sizes != (config.src_vocab_size, config.tgt_vocab_size):
        raise ModelLoadError(
            f"{directory}: tokenizer vocabulary ({sizes[0]}/{sizes[1]}) "
            f"does not match {CONFIG_FILE} ({config.src_vocab_size}/{config.tgt_vocab_size})"
        )
    check_shapes(network / WEIGHTS_FILE, expected_shapes(config))  # before the real model allocates anything
    model = Transformer(config)
    load_weights(model, network / WEIGHTS_FILE)
    return LoadedModel(model.to(device).eval(), tokenizer, directory)
