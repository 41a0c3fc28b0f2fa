"""Growing a model deeper (model/grow.py): the grown model computes what its parent computed, its new layers can
learn, and only what keeps the output may grow."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import tiny_config
from test_training import records, tiny

from model.config import ConfigError, ModelConfig
from model.grow import check_growable, grow, parent_layers
from model.transformer import Transformer
from training.train import main
from translate.translator import Translator
from workshop.average import main as average_main
from workshop.deepen import main as grow_main


def test_parent_layers_spread_in_order_and_cover_every_parent_layer() -> None:
    for n_parent in range(1, 7):
        for n_child in range(n_parent, 13):
            sources = parent_layers(n_parent, n_child)
            assert len(sources) == n_child and sources == sorted(sources)
            assert set(sources) == set(range(n_parent))
    assert parent_layers(4, 8) == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ConfigError, match="4 → 3"):
        parent_layers(4, 3)


@pytest.mark.parametrize("layers", [(2, 2), (4, 2), (3, 5), (6, 3)])
def test_a_grown_model_gives_its_parents_log_probabilities_and_attention(layers: tuple[int, int]) -> None:
    torch.manual_seed(0)
    parent = Transformer(tiny_config(n_encoder_layers=2, n_decoder_layers=2)).eval()
    child = grow(parent, tiny_config(n_encoder_layers=layers[0], n_decoder_layers=layers[1])).eval()
    src, tgt = torch.randint(4, 40, (3, 7)), torch.randint(4, 40, (3, 5))
    src[0, 5:] = 0  # padding
    with torch.no_grad():
        assert torch.allclose(child(src, tgt), parent(src, tgt), atol=1e-5)
        # The parent's first layer is the child's first layer, weights and all.
        assert torch.equal(child.encode(src, True).weights[0], parent.encode(src, True).weights[0])


def test_the_new_layers_learn() -> None:
    """A zeroed W_O or W2 gets a gradient: one step moves every new layer off zero."""
    torch.manual_seed(0)
    child = grow(Transformer(tiny_config(n_encoder_layers=1, n_decoder_layers=1)), tiny_config())
    src, tgt = torch.randint(4, 40, (4, 6)), torch.randint(4, 40, (4, 6))
    loss = torch.nn.functional.cross_entropy(child(src, tgt).flatten(0, 1), tgt.flatten())
    loss.backward()
    for name in (
        "encoder_layers.1.self_attn.out_proj",
        "encoder_layers.1.ffn.w2",
        "decoder_layers.1.cross_attn.out_proj",
    ):
        weight = child.get_submodule(name).weight
        assert not weight.any() and weight.grad.abs().sum() > 0


def test_only_more_layers_of_a_pre_norm_model_can_grow() -> None:
    base = tiny_config()
    with pytest.raises(ConfigError, match=r"model\.d_model"):
        check_growable(base, tiny_config(d_model=64))
    with pytest.raises(ConfigError, match="2 → 1"):
        check_growable(base, tiny_config(n_decoder_layers=1))
    with pytest.raises(ConfigError, match="pre-norm"):
        check_growable(tiny_config(norm="post"), tiny_config(norm="post", n_encoder_layers=3))
    check_growable(tiny_config(norm="post"), tiny_config(norm="post"))  # the same shape is no growth


def test_a_run_started_from_a_parent_with_more_layers_evaluates_like_the_parent(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "parent"
    assert main(tiny(toy_corpus, parent, "--optim.max_steps=20", "--run.eval_every=20")) == 0
    child = tmp_path / "child"
    grown = ["--model.n_encoder_layers=3", "--model.n_decoder_layers=2", "--optim.lr=0", "--optim.max_steps=5"]
    assert main(tiny(toy_corpus, child, "--init-from", str(parent), *grown)) == 0
    config, parent_config = (ModelConfig.from_json_file(d / "config.json") for d in (child, parent))
    assert (config.n_encoder_layers, config.n_decoder_layers) == (3, 2) and config.d_model == parent_config.d_model
    assert records(child, "eval")[-1]["dev_loss"] == pytest.approx(records(parent, "eval")[-1]["dev_loss"], abs=1e-5)
    assert main(tiny(toy_corpus, tmp_path / "fewer", "--init-from", str(child), "--model.n_encoder_layers=1")) == 2
    assert "3 → 1" in capsys.readouterr().err


def test_a_grown_folder_translates_as_its_parent_and_averages_with_a_child_of_its_shape(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    grown = tmp_path / "grown"
    assert (
        grow_main(
            ["--model", str(tiny_model_dir), "--encoder-layers", "3", "--decoder-layers", "3", "--out", str(grown)]
        )
        == 0
    )
    assert ModelConfig.from_json_file(grown / "config.json").n_encoder_layers == 3
    parent, child = Translator.load(tiny_model_dir), Translator.load(grown)
    for text in ("El gato rojo.", "El perro azul 2."):
        a, b = parent.translate(text), child.translate(text)
        assert b.text == a.text
        assert b.best.log_prob == pytest.approx(a.best.log_prob, abs=1e-4)
    # The mean of the grown parent and itself is itself: workshop.average accepts the grown shape.
    assert average_main(["--model", str(grown), "--model", str(grown), "--out", str(tmp_path / "soup")]) == 0
    assert Translator.load(tmp_path / "soup").translate("El gato rojo.").text == parent.translate("El gato rojo.").text


def test_growing_a_folder_refuses_fewer_layers_and_a_folder_that_is_not_a_model(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def grow_to(model: Path, encoder: int, out: Path) -> int:
        return grow_main(
            ["--model", str(model), "--encoder-layers", str(encoder), "--decoder-layers", "1", "--out", str(out)]
        )

    assert grow_to(tiny_model_dir, 3, tmp_path / "deep") == 0
    assert grow_to(tmp_path / "deep", 2, tmp_path / "shallow") == 2
    assert "3 → 2" in capsys.readouterr().err and not (tmp_path / "shallow").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    assert grow_to(tiny_model_dir, 3, tmp_path / "notes") == 2
    assert "not a model directory" in capsys.readouterr().err
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
