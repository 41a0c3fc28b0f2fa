"""Weights I/O of a model directory: ``config.json`` + ``model.safetensors``, shapes checked from the file's header
before anything is allocated, older layouts converted on load; and whole-folder replacement. Never pickle.
(translate/model_dir.py loads a directory with its tokenizer.)"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from model.config import ModelConfig
from model.run_dir import CONFIG_FILE, WEIGHTS_FILE
from model.transformer import Transformer


class ModelLoadError(ValueError):
    """A model directory cannot be loaded; the message names the file and the problem."""


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


def file_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes of a safetensors file (older layouts renamed), read from its header alone."""
    if not path.is_file():
        raise ModelLoadError(f"{path}: weights file not found")
    try:
        with safe_open(str(path), "pt") as f:
            header = {name: f.get_slice(name).get_shape() for name in f.keys()}  # noqa: SIM118 (not iterable)
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file, truncated or corrupted ({err})") from None
    # Meta tensors hold shapes only: upgrade_layout stacks q/k/v exactly as it will on load, allocating nothing.
    try:
        tensors = upgrade_layout({name: torch.empty(shape, device="meta") for name, shape in header.items()})
    except RuntimeError as err:  # q/k/v projections that cannot be stacked
        raise ModelLoadError(f"{path}: older-layout q/k/v projections of different shapes ({err})") from None
    return {name: tuple(t.shape) for name, t in tensors.items()}


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes of ``Transformer(config)``, from a model built on the meta device (no memory)."""
    with torch.device("meta"):
        model = Transformer(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def check_shapes(path: Path, expected: dict[str, tuple[int, ...]], new_rows: bool = False) -> None:
    """Raise ModelLoadError unless the weights in ``path`` fit ``expected``, before any of them is read.

    With ``new_rows``, an embedding may have fewer rows in the file than expected (see ``load_weights``).
    """
    found = file_shapes(path)
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    if missing or extra:
        raise ModelLoadError(
            f"{path}: weights do not fit {CONFIG_FILE} (missing: {missing[:3]}, unexpected: {extra[:3]})"
        )
    for name, shape in expected.items():
        old = found[name]
        grown = len(old) == len(shape) == 2 and old[1] == shape[1] and old[0] < shape[0]
        if old != shape and not (new_rows and "embed" in name and grown):
            raise ModelLoadError(f"{path}: tensor {name} has shape {old}, {CONFIG_FILE} implies {shape}")


def load_weights(model: Transformer, path: Path, new_rows: bool = False) -> None:
    """Copy weights (current or older layout) from ``path`` into ``model``; misfits raise ModelLoadError.

    With ``new_rows``, an embedding of ``model`` may have more rows than the file's (a vocabulary that gained
    pieces at its end): the file's rows are copied and the new ones keep their initialisation.
    """
    params = dict(model.named_parameters())
    check_shapes(path, {name: tuple(p.shape) for name, p in params.items()}, new_rows)
    try:
        tensors = upgrade_layout(load_file(str(path)))
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file, truncated or corrupted ({err})") from None
    with torch.no_grad():
        for name, p in params.items():
            old = tensors[name]
            p[: old.shape[0]].copy_(old.to(p.dtype))  # all rows, except where new_rows let an embedding grow


def replace_dir(new: Path, out: Path) -> None:
    """Put the folder ``new`` at ``out`` by renames only (same parent): ``out`` is the old folder whole or the new one.

    An existing ``out`` is moved aside, ``new`` renamed in, then the old one deleted; if the second rename fails
    the old folder is moved back.
    """
    if not out.exists():
        new.rename(out)
        return
    old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
    out.rename(old)
    try:
        new.rename(out)
    except OSError:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(out: Path, purpose: str) -> Iterator[Path]:
    """A new empty folder beside ``out`` to write into; when the block ends without error it is put at ``out``
    (``replace_dir``: the old folder whole or the new one), and on any error it is removed, ``out`` left as it was.
    ``out`` is resolved first (a real name, not "." or a link) so the temporary folder and the rename share a parent.
    """
    dest = Path(out).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{purpose}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful rename
