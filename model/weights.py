"""Weights I/O of a model directory: ``config.json`` + ``model.safetensors``, shapes checked from the file's header
before anything is allocated; and whole-folder replacement. Never pickle.
(translate/model_dir.py loads a directory with its tokenizer.)"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save

from model.bounded_read import real, regular_size
from model.config import ModelConfig
from model.run_dir import CONFIG_FILE, WEIGHTS_FILE
from model.transformer import Transformer

MAX_HEADER_BYTES = 1 << 24  # of a safetensors header (names, shapes, offsets): 64+64 layers take 0.5 MB
T = TypeVar("T")  # what a writer given to write_beside returns
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")  # safetensors' names of the dtypes weights may be saved in


class ModelLoadError(ValueError):
    """A model directory cannot be loaded; the message names the file and the problem."""


def write_beside(path: Path, write: Callable[[BinaryIO], T]) -> T:
    """The project's one atomic writer: ``write`` fills a temporary file of its own beside ``path`` (a name no other
    writer uses, never a link; open for reading too), fsynced, then renamed in: ``path`` stays the old file whole or
    becomes the new one; returns what ``write`` returns. On any error (a full disk, or one ``write`` raises to refuse
    what it wrote) the temporary file is removed and the error raised."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "x+b") as f:
            result = write(f)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result


def save_model(model: Transformer, directory: Path, dtype: torch.dtype | None = None) -> None:
    """Write model.safetensors and config.json, each beside and renamed in (``write_beside``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Serialised in memory and written by Python: a failed write raises OSError with its errno (ENOSPC), where
    # safetensors' own writer would raise a SafetensorError naming none.
    # named_parameters holds shared and tied matrices once; ``dtype`` casts them (e.g. to fp16 for shipping).
    weights = {
        name: (p.detach().to(dtype) if dtype else p.detach()).contiguous().cpu() for name, p in model.named_parameters()
    }
    data = save(weights, metadata={"format": "pt"})
    write_beside(directory / WEIGHTS_FILE, lambda f: f.write(data))
    write_beside(directory / CONFIG_FILE, lambda f: f.write(model.config.to_json().encode("utf-8")))


def file_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes of a safetensors file, read from its header alone; every tensor must be
    floating-point (integers of the right size would load, and translate as garbage)."""
    size = regular_size(path, ModelLoadError)
    with open(path, "rb") as file:
        header = int.from_bytes(file.read(8), "little")  # safetensors: the header's length, then the header
    if not 0 < header <= MAX_HEADER_BYTES:
        raise ModelLoadError(f"{path}: a safetensors header of {header:,} bytes; expected at most {MAX_HEADER_BYTES:,}")
    if header > size - 8:
        raise ModelLoadError(
            f"{path}: truncated: its header needs {header:,} bytes, the file holds {max(0, size - 8):,} after it"
        )
    try:
        with safe_open(str(path), "pt") as f:
            slices = {name: f.get_slice(name) for name in f.keys()}  # noqa: SIM118 (not iterable)
            dtypes = {name: part.get_dtype() for name, part in slices.items()}
            shapes = {name: tuple(part.get_shape()) for name, part in slices.items()}
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file, truncated or corrupted ({err})") from None
    for name, dtype in dtypes.items():
        if dtype not in FLOAT_DTYPES:
            raise ModelLoadError(
                f"{path}: tensor {name} holds {dtype}; weights are floating-point ({', '.join(FLOAT_DTYPES)})"
            )
    return shapes


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes of ``Transformer(config)``, from a model built on the meta device (no memory)."""
    with torch.device("meta"):
        model = Transformer(config)
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def check_shapes(path: Path, expected: dict[str, tuple[int, ...]], new_rows: bool = False) -> None:
    """Raise ModelLoadError unless the weights in ``path`` fit ``expected`` (``new_rows``: see ``load_weights``),
    before any of them is read."""
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
    """Copy weights from ``path`` into ``model``; misfits raise ModelLoadError. With ``new_rows``, an embedding of
    ``model`` may have more rows than the file's (a vocabulary that gained pieces at its end): the file's rows are
    copied and the new ones keep their initialisation."""
    params = dict(model.named_parameters())
    check_shapes(path, {name: tuple(p.shape) for name, p in params.items()}, new_rows)
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: not a readable safetensors file, truncated or corrupted ({err})") from None
    with torch.no_grad():
        for name, p in params.items():
            old = tensors[name]
            p[: old.shape[0]].copy_(old.to(p.dtype))  # all rows, except where new_rows let an embedding grow


def replace_dir(new: Path, out: Path) -> None:
    """Put the folder ``new`` at ``out`` by renames alone (same parent): ``out`` is the old one whole or the new."""
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
    dest = real(out)  # a link loop: the mkdir below says ELOOP
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{purpose}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful rename
