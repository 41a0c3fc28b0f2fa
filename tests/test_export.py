"""training.export: a run directory becomes a small, loadable model directory without training leftovers."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from model.translate import Translator
from training.export import main


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
