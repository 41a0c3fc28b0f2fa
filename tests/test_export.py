"""training.export: a run directory becomes a small, loadable model directory without training leftovers;
export never destroys a run, unrelated files or the previous model."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.run_dir import ALIGNMENT_FILE, CT2_DIR, MODEL_CARD_FILE
from training.export import main
from translate.translator import Translator


def test_export_writes_half_precision_weights_and_only_inference_files(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "shipped"
    assert main(["--run", str(tiny_model_dir), "--out", str(out), "--dtype", "float16"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "spm.model", "metrics.json", "train_config.json"} <= names
    assert not names & {"train_state.pt", "checkpoints", "splits", "best", "metrics.jsonl"}
    assert all(t.dtype == torch.float16 for t in load_file(str(out / "model.safetensors")).values())
    sentence = "El gato rojo 3."
    assert Translator.load(out).translate(sentence).text == Translator.load(tiny_model_dir).translate(sentence).text


def test_export_of_an_unfinished_run_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["--run", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.fixture
def run_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """A copy of the tiny run, so that a broken export could only harm the copy."""
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "run"))


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by relative path, with its bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("out", "says"), [("run", "is the run directory itself"), ("run/shipped", "inside"), (".", "contains")]
)
def test_out_overlapping_the_run_is_refused_before_anything_is_written(
    run_copy: Path, out: str, says: str, capsys
) -> None:
    before = snapshot(run_copy.parent)
    weights = (run_copy / "model.safetensors").read_bytes()
    assert main(["--run", str(run_copy), "--out", str(run_copy.parent / out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and says in err and err.count("\n") == 1
    assert (run_copy / "model.safetensors").read_bytes() == weights
    assert snapshot(run_copy.parent) == before
    assert sorted(p.name for p in run_copy.parent.iterdir()) == ["run"]


def test_a_folder_that_is_not_a_model_is_never_replaced(run_copy: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "documents"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["--run", str(run_copy), "--out", str(out)]) == 2
    assert "is not a model directory" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_export_over_a_model_leaves_nothing_that_described_the_old_one(run_copy: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "shipped"
    assert main(["--run", str(run_copy), "--out", str(out)]) == 0
    (out / MODEL_CARD_FILE).write_text("# a card of the previous model\n")
    (out / ALIGNMENT_FILE).write_text("{}\n")
    (out / CT2_DIR).mkdir()
    (out / CT2_DIR / "model.bin").write_bytes(b"old")
    assert main(["--run", str(run_copy), "--out", str(out), "--dtype", "float32"]) == 0
    names = {p.name for p in out.iterdir()}
    assert not names & {MODEL_CARD_FILE, ALIGNMENT_FILE, CT2_DIR}
    assert f"{MODEL_CARD_FILE}, {ALIGNMENT_FILE}, {CT2_DIR}" in capsys.readouterr().out
    assert load_file(str(out / "model.safetensors")).keys() == load_file(str(run_copy / "model.safetensors")).keys()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shipped"]  # no temporary or old folder left


def test_a_full_disk_in_the_middle_leaves_the_old_model_whole(
    run_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    out = tmp_path / "shipped"
    assert main(["--run", str(run_copy), "--out", str(out)]) == 0
    (out / MODEL_CARD_FILE).write_text("# the card of this model\n")
    before = snapshot(out)

    def full_disk(model: torch.nn.Module, directory: Path, dtype: torch.dtype | None = None) -> None:
        (directory / "model.safetensors.tmp").write_bytes(b"half a file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("training.export.save_model", full_disk)
    assert main(["--run", str(run_copy), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "No space left on device" in err and "unchanged" in err
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "shipped"]
