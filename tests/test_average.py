"""Averaging models (workshop.average): the weights are the mean, the first member's files come along, and what
cannot be averaged is refused naming the model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_name_guard import EVERYONE, LISTS, corpus

from model.run_dir import NAME_GUARD_FILE, WEIGHTS_FILE
from translate.name_guard import build
from translate.translator import Translator
from workshop.average import main


def perturbed(model_dir: Path, out: Path, seed: int) -> Path:
    """A copy of ``model_dir`` with every weight moved by a little seeded noise."""
    shutil.copytree(model_dir, out)
    generator = torch.Generator().manual_seed(seed)
    tensors = load_file(str(out / WEIGHTS_FILE))
    moved = {k: (t.float() + 0.01 * torch.randn(t.shape, generator=generator)).contiguous() for k, t in tensors.items()}
    save_file(moved, str(out / WEIGHTS_FILE))
    return out


def test_the_average_is_the_mean_of_the_weights(tmp_path: Path, tiny_model_dir: Path) -> None:
    a, b = perturbed(tiny_model_dir, tmp_path / "a", 1), perturbed(tiny_model_dir, tmp_path / "b", 2)
    build(corpus(), "es", LISTS, EVERYONE).save(a / NAME_GUARD_FILE)  # a name guard, as a real run has
    assert main(["--model", str(a), "--model", str(b), "--out", str(tmp_path / "soup")]) == 0
    soup, wa, wb = (load_file(str(d / WEIGHTS_FILE)) for d in (tmp_path / "soup", a, b))
    assert soup.keys() == wa.keys()
    assert all(torch.allclose(soup[k], (wa[k] + wb[k]) / 2, atol=1e-7) for k in soup)
    for name in ("spm.model", NAME_GUARD_FILE):  # one tokenizer, one corpus: the first member's name guard comes too
        assert (tmp_path / "soup" / name).read_bytes() == (a / name).read_bytes()
    soup_model = Translator.load(tmp_path / "soup")
    assert soup_model.guard is not None and soup_model.translate("El gato rojo.").text


def test_a_model_averaged_with_itself_translates_as_itself(tmp_path: Path, tiny_model_dir: Path) -> None:
    out = tmp_path / "self"
    assert main(["--model", str(tiny_model_dir), "--model", str(tiny_model_dir), "--out", str(out)]) == 0
    for text in ("El gato rojo.", "El perro azul 2."):
        assert Translator.load(out).translate(text).text == Translator.load(tiny_model_dir).translate(text).text


def test_an_average_is_scored_on_its_test_split_as_a_run_is(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "self"
    assert main(["--model", str(tiny_model_dir), "--model", str(tiny_model_dir), "--out", str(out)]) == 0
    run, soup = (json.loads((d / "metrics.json").read_text()) for d in (tiny_model_dir, out))
    for entry in ("test_greedy", "test_greedy_typed"):  # the same weights: the same translations, the same scores
        for key in ("bleu", "chrf", "sentences", "hyp_ref_len_ratio", "truncated_lines", "bleu_signature"):
            assert soup[entry][key] == run[entry][key], (entry, key)
    assert str(tiny_model_dir) in soup["final"]
    folder = tmp_path / "folder"  # a model folder, as exported: no splits/, its split made again from its config
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns("splits", "metrics.json"))
    assert main(["--model", str(folder), "--model", str(folder), "--out", str(tmp_path / "folder-soup")]) == 0
    rebuilt = json.loads((tmp_path / "folder-soup" / "metrics.json").read_text())
    assert all(rebuilt[entry]["bleu"] == run[entry]["bleu"] for entry in ("test_greedy", "test_greedy_typed"))
    bare = tmp_path / "bare"  # weights and tokenizer only: nothing to make a split from, so nothing to score on
    shutil.copytree(tiny_model_dir, bare, ignore=shutil.ignore_patterns("splits", "metrics.json", "train_config.json"))
    assert main(["--model", str(bare), "--model", str(bare), "--out", str(tmp_path / "bare-soup")]) == 0
    assert not (tmp_path / "bare-soup" / "metrics.json").exists()
    assert (
        f"{tmp_path / 'bare-soup'}: not scored: {bare}: no splits/ and no train_config.json" in capsys.readouterr().err
    )


def test_models_that_cannot_be_averaged_are_refused(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(tiny_model_dir, other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "dropout": config["dropout"] + 0.25}))
    assert main(["--model", str(tiny_model_dir), "--model", str(other), "--out", str(tmp_path / "x")]) == 2
    assert f"{other}: config.json differs" in capsys.readouterr().err
    assert main(["--model", str(tiny_model_dir), "--out", str(tmp_path / "x")]) == 2
    assert "at least two" in capsys.readouterr().err
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    assert main(["--model", str(tiny_model_dir), "--model", str(tiny_model_dir), "--out", str(tmp_path / "notes")]) == 2
    assert "not a model directory" in capsys.readouterr().err and (tmp_path / "notes" / "keep.txt").exists()
    assert not (tmp_path / "x").exists()
