"""Training state for exact resume, written atomically, and checkpoint averaging."""

from __future__ import annotations

import errno
import io
import random
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from model.bounded_read import QUOTE, regular_size
from model.run_dir import SNAPSHOTS_DIR as CHECKPOINT_DIR
from model.run_dir import STATE_FILE, WEIGHTS_FILE
from model.transformer import Transformer
from model.weights import ModelLoadError, save_model, staged_dir, write_beside

FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # no space, over quota, over the largest file allowed


def disk_full_message(run_dir: Path, err: OSError) -> str:
    """One line for a checkpoint that did not fit on the disk: which folder, and how to go on."""
    folder = Path(err.filename).parent if err.filename else run_dir
    then = (
        "continue with --resume from the last complete state"
        if (run_dir / STATE_FILE).is_file()
        else "start it again (no training state had been saved yet)"
    )
    return f"{folder}: {err.strerror or err} while saving; the files saved before are whole: free space, then {then}"


def rng_states() -> dict[str, Any]:
    """Python and torch (CPU, CUDA) generator states: dropout masks after a resume match an unbroken run."""
    states = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng(states: dict[str, Any]) -> None:
    """Put back the generator states saved by ``rng_states``."""
    random.setstate(states["python"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def save_state(
    run_dir: Path,
    model: Transformer,
    optimizer: torch.optim.Optimizer,
    progress: dict[str, Any],
    rngs: list[dict[str, Any]],
) -> None:
    """Everything needed to continue exactly: weights, optimizer, progress (step, epoch, batch), RNG per process;
    written beside and renamed in (``write_beside``), never half-written. Serialised in memory first, as ``save_model``
    does, so a failed write is an OSError with its errno (torch's own writer would raise a RuntimeError without it),
    and a full disk is told apart from a bug."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "progress": progress, "rng": rngs}
    data = io.BytesIO()
    torch.save(state, data)
    write_beside(run_dir / STATE_FILE, lambda f: f.write(data.getbuffer()))


class StateError(ValueError):
    """A training state cannot be resumed from; the message names the file."""


def state_error(run_dir: Path, err: BaseException) -> StateError:
    return StateError(
        f"{run_dir / STATE_FILE}: not a training state of this run, truncated or damaged ({str(err)[:QUOTE]}); "
        "it cannot be resumed: remove it to train the run again from its start, or train into a new --out"
    )


def load_state(run_dir: Path, mmap: bool = False) -> dict[str, Any]:
    """The saved state (``mmap``: its tensors mapped, not read: a quick check that it opens)."""
    path = run_dir / STATE_FILE
    regular_size(path, StateError)
    try:  # weights_only: the state holds only tensors, numbers, strings and containers, so no pickled code runs
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:  # torch raises RuntimeError, UnpicklingError, EOFError, zip errors...
        raise state_error(run_dir, err) from None
    return state


def snapshots(run_dir: Path) -> list[Path]:
    """The ``checkpoints/step-N`` snapshots of a run, oldest first."""
    return sorted((run_dir / CHECKPOINT_DIR).glob("step-*"))


def snapshot_step(path: Path) -> int:
    return int(path.name.removeprefix("step-"))


def drop_snapshots_after(run_dir: Path, step: int) -> None:
    """On resume: remove snapshots newer than the saved state, and half-written ones (``.step-N.partial-*``, hidden:
    ``staged_dir``), which a killed run may have left."""
    for path in snapshots(run_dir):
        if snapshot_step(path) > step:
            shutil.rmtree(path)
    for partial in (run_dir / CHECKPOINT_DIR).glob(".step-*"):
        shutil.rmtree(partial, ignore_errors=True)


def snapshot_path(run_dir: Path, step: int) -> Path:
    return run_dir / CHECKPOINT_DIR / f"step-{step:07d}"


def save_checkpoint(run_dir: Path, model: Transformer, step: int, keep: int) -> Path:
    """Weights-only snapshot ``checkpoints/step-N/`` for averaging, written beside and renamed in; then keeps the
    newest ``keep``."""
    path = snapshot_path(run_dir, step)
    with staged_dir(path, "partial") as staged:
        save_model(model, staged)
    existing = snapshots(run_dir)
    for old in existing[: max(0, len(existing) - max(1, keep))]:
        shutil.rmtree(old)
    return path


def average_checkpoints(paths: list[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the weights in several ``model.safetensors`` snapshots."""
    if not paths:
        raise ModelLoadError("no checkpoints to average")
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        for name, tensor in load_file(str(path / WEIGHTS_FILE)).items():
            total[name] = total.get(name, 0) + tensor.double()
    return {name: (t / len(paths)).float() for name, t in total.items()}
