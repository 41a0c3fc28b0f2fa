"""A disk that fills at a checkpoint: every file saved before stays whole, the run stops with one line naming the
folder (rc 2), and ``--resume`` continues from the last complete state to the end."""

from __future__ import annotations

import builtins
import errno
import os
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import toy_pairs, write_tsv
from safetensors.torch import load_file

import model.weights
import training.metrics
from model.run_dir import BEST_DIR, CONFIG_FILE, METRICS_LOG_FILE, RESULT_FILE, SNAPSHOTS_DIR, STATE_FILE, WEIGHTS_FILE
from training.train import main as train

ARGS = [
    "--config",
    "configs/tiny.toml",
    "--run.device=cpu",
    "--optim.max_steps=12",
    "--optim.max_tokens=160",
    "--run.eval_every=4",
    "--run.save_every=4",
    "--run.log_every=2",
    "--run.dev_bleu_sentences=2",
]


class FullDisk:
    """A file that takes half of the first write, then says the disk is full (as write(2) does)."""

    def __init__(self, file: Any) -> None:
        self.file = file

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *_: object) -> None:
        self.file.close()

    def write(self, data: Any) -> int:
        self.file.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        self.file.flush()

    def fileno(self) -> int:
        return self.file.fileno()


def fill_the_disk_at(monkeypatch: pytest.MonkeyPatch, folder: str, name: str, nth: int) -> None:
    """The ``nth`` opening of ``folder/name`` by the checkpoint or metrics writers finds the disk full."""
    seen = []

    def opened(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        real = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 (the caller's with closes it)
        path = Path(file)
        unique = re.sub(r"\.[0-9a-f]{8}\.tmp$", ".tmp", path.name)  # write_beside's temporary file
        if unique == name and path.parent.name.startswith(folder) and "r" not in mode:
            seen.append(path)
            if len(seen) == nth:
                return FullDisk(real)
        return real

    monkeypatch.setattr(model.weights, "open", opened, raising=False)
    monkeypatch.setattr(training.metrics, "open", opened, raising=False)


def assert_whole(run: Path) -> None:
    """No temporary leftovers; the state, every snapshot and the best model load."""
    leftovers = [p for p in run.rglob("*") if p.name.endswith(".tmp") or ".partial-" in p.name]
    assert not leftovers
    if (run / STATE_FILE).is_file():
        assert torch.load(run / STATE_FILE, weights_only=True)["progress"]["step"] > 0
    for folder in [*(run / SNAPSHOTS_DIR).glob("step-*"), run / BEST_DIR]:
        if folder.exists():
            assert load_file(folder / WEIGHTS_FILE) and (folder / CONFIG_FILE).read_text().startswith("{")


@pytest.mark.parametrize(
    ("folder", "name", "nth"),
    [
        ("run", STATE_FILE + ".tmp", 2),  # the second training state
        (".step-", WEIGHTS_FILE + ".tmp", 2),  # the second snapshot's weights
        (".step-", CONFIG_FILE + ".tmp", 1),  # the first snapshot's config
        (BEST_DIR, WEIGHTS_FILE + ".tmp", 2),  # the best model so far
        ("run", METRICS_LOG_FILE, 5),  # a metrics record after the first save
        ("run", STATE_FILE + ".tmp", 1),  # the first state: nothing to resume from, start again
    ],
)
def test_a_full_disk_at_a_checkpoint_keeps_the_last_state_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, folder: str, name: str, nth: int
) -> None:
    corpus, run = write_tsv(tmp_path / "toy.tsv", toy_pairs(120)), tmp_path / "run"
    argv = ["--corpus", str(corpus), "--out", str(run), *ARGS]
    fill_the_disk_at(monkeypatch, folder, name, nth)
    assert train(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(run) in errors[0] and "No space left on device" in errors[0], errors
    assert_whole(run)
    monkeypatch.undo()
    resume = (run / STATE_FILE).is_file()
    assert ("--resume" in errors[0]) == resume
    assert train([*argv, "--resume"] if resume else argv) == 0
    assert (run / RESULT_FILE).is_file()
    assert torch.load(run / STATE_FILE, weights_only=True)["progress"]["step"] == 12
    assert_whole(run)
