"""A model directory: ``config.json`` + ``model.safetensors`` (+ tokenizer). Never pickle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import ConfigError, ModelConfig
from model.run_dir import CONFIG_FILE, WEIGHTS_FILE
from model.tokenizer import Tokenizer, TokenizerError
from model.transformer import Transformer


class ModelLoadError(ValueError):
    """A model directory cannot be loaded; the message names the file and the problem."""


@dataclass(frozen=True)
class LoadedModel:
    model: Transformer
    tokenizer: Tokenizer
    directory: Path


def weights_of(model: Transformer, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """Unique named parameters (shared/tied matrices once), optionally cast (e.g. to fp16 for shipping)."""
    return {
        name: (p.detach().to(dtype) if dtype else p.detach()).contiguous().cpu() for name, p in model.named_parameters()
    }


def save_model(model: Transformer, directory: Path, dtype: torch.dtype | None = None) -> None:
    """Write config.json and model.safetensors (atomically: temporary file, then rename)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (WEIGHTS_FILE + ".tmp")
    save_file(weights_of(model, dtype), str(tmp), metadata={"format": "pt"})
    tmp.replace(directory / WEIGHTS_FILE)
    (directory / CONFIG_FILE).write_text(model.config.to_json(), encoding="utf-8")


# Layout before the fused projections: per-sublayer norms inside a ``Sublayer`` module, Q/K/V as three Linears.
_OLD_NORMS = {
    ".attn_sub.norm.": ".self_attn_norm.",  # encoder layers
    ".self_sub.norm.": ".self_attn_norm.",  # decoder layers
    ".cross_sub.norm.": ".cross_attn_norm.",
    ".ffn_sub.norm.": ".ffn_norm.",
}


def upgrade_layout(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Weights saved by older versions (three q/k/v_proj Linears, ``*_sub.norm``) under the current names.

    W_Q, W_K, W_V are stacked into ``in_proj`` without any arithmetic, so outputs are unchanged. Tensors of the
    current layout pass through; an incomplete q/k/v triple is left as it is (and reported as not fitting).
    """
    out = {}
    for name, tensor in tensors.items():
        for old, new in _OLD_NORMS.items():
            name = name.replace(old, new)
        out[name] = tensor
    for name in [n for n in out if ".q_proj." in n]:
        prefix, kind = name.split(".q_proj.")  # e.g. "decoder_layers.0.cross_attn", "weight"
        parts = [f"{prefix}.{p}_proj.{kind}" for p in "qkv"]
        if all(p in out for p in parts):
            out[f"{prefix}.in_proj.{kind}"] = torch.cat([out.pop(p) for p in parts])
    return out


def load_weights(model: Transformer, path: Path, new_rows: bool = False) -> None:
    """Copy weights (current or older layout) from ``path`` into ``model``; misfits raise ModelLoadError.

    With ``new_rows``, an embedding of ``model`` may have more rows than the file's (a vocabulary that gained
    pieces at its end): the file's rows are copied and the new ones keep their initialisation.
    """
    if not path.is_file():
        raise ModelLoadError(f"{path}: weights file not found")
    try:
        tensors = upgrade_layout(load_file(str(path)))
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file, truncated or corrupted ({err})") from None
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(tensors))
    extra = sorted(set(tensors) - set(params))
    if missing or extra:
        raise ModelLoadError(
            f"{path}: weights do not fit {CONFIG_FILE} (missing: {missing[:3]}, unexpected: {extra[:3]})"
        )
    with torch.no_grad():
        for name, p in params.items():
            old = tensors[name]
            grown = old.dim() == 2 and old.shape[1] == p.shape[1] and old.shape[0] < p.shape[0]
            if new_rows and "embed" in name and grown:
                p[: old.shape[0]].copy_(old.to(p.dtype))
                continue
            if old.shape != p.shape:
                raise ModelLoadError(
                    f"{path}: tensor {name} has shape {tuple(old.shape)}, {CONFIG_FILE} implies {tuple(p.shape)}"
                )
            p.copy_(old.to(p.dtype))


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
    model = Transformer(config)
    load_weights(model, directory / WEIGHTS_FILE)
    return LoadedModel(model.to(device).eval(), tokenizer, directory)
