"""Model directories: save -> load is exact; broken or oversized directories give errors that name the file, before
any tensor is allocated."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from conftest import tiny_config
from safetensors.torch import load_file, save_file

from model.config import ModelConfig
from model.transformer import Transformer
from model.weights import ModelLoadError, check_shapes, expected_shapes, file_shapes, save_model
from translate.model_dir import load_model
from translate.translator import DecodeOptions, Translator


@pytest.fixture
def model_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """A copy of the inference files of the tiny run (config, tokenizer, weights) to break."""
    target = tmp_path / "model"
    target.mkdir()
    for name in ("config.json", "model.safetensors", "spm.model"):
        shutil.copy(tiny_model_dir / name, target / name)
    return target


def test_save_then_load_gives_identical_outputs(model_copy: Path, tmp_path: Path) -> None:
    loaded = load_model(model_copy)
    src = torch.tensor([loaded.tokenizer.encode_src("El gato rojo 3.")])
    tgt_in = torch.tensor([[2, 10, 11, 12]])
    save_model(loaded.model, tmp_path / "again")
    loaded.tokenizer.save(tmp_path / "again")
    again = load_model(tmp_path / "again")
    assert torch.equal(loaded.model(src, tgt_in), again.model(src, tgt_in))
    for name, tensor in load_file(str(model_copy / "model.safetensors")).items():
        assert torch.equal(tensor, load_file(str(tmp_path / "again" / "model.safetensors"))[name])


def test_half_precision_weights_load_into_an_fp32_model(model_copy: Path, tmp_path: Path) -> None:
    loaded = load_model(model_copy)
    save_model(loaded.model, tmp_path / "fp16", dtype=torch.float16)
    loaded.tokenizer.save(tmp_path / "fp16")
    half = load_model(tmp_path / "fp16")
    assert all(p.dtype == torch.float32 for p in half.model.parameters())
    a = Translator(loaded.model, loaded.tokenizer).translate("El perro azul 5.").text
    b = Translator(half.model, half.tokenizer).translate("El perro azul 5.").text
    assert a == b


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        load_model(tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "spm.model"])
def test_missing_file_is_named(model_copy: Path, name: str) -> None:
    (model_copy / name).unlink()
    with pytest.raises(ModelLoadError, match=name.split(".")[0]):
        load_model(model_copy)


def test_truncated_weights(model_copy: Path) -> None:
    path = model_copy / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match=r"model\.safetensors.*(truncated|corrupted)"):
        load_model(model_copy)


def test_garbage_weights_and_garbage_tokenizer(model_copy: Path) -> None:
    (model_copy / "model.safetensors").write_bytes(b"\x00not safetensors at all")
    with pytest.raises(ModelLoadError, match=r"model.safetensors"):
        load_model(model_copy)
    (model_copy / "spm.model").write_bytes(b"garbage")
    with pytest.raises(ModelLoadError, match=r"spm.model"):
        load_model(model_copy)


def test_weights_that_do_not_fit_the_config(model_copy: Path) -> None:
    config = json.loads((model_copy / "config.json").read_text())
    config["d_ff"] *= 2
    (model_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match=r"model\.safetensors: tensor .* has shape"):
        load_model(model_copy)


def test_missing_tensor_is_named(model_copy: Path) -> None:
    path = model_copy / "model.safetensors"
    tensors = load_file(str(path))
    del tensors["output.weight" if "output.weight" in tensors else next(iter(tensors))]
    tensors.pop(next(iter(tensors)))
    save_file(tensors, str(path))
    with pytest.raises(ModelLoadError, match="missing"):
        load_model(model_copy)


def test_invalid_config_json_names_file_and_key(model_copy: Path) -> None:
    (model_copy / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=r"config.json: not valid JSON"):
        load_model(model_copy)
    (model_copy / "config.json").write_text(json.dumps({"src_vocab_size": 10, "tgt_vocab_size": 10, "colour": "red"}))
    with pytest.raises(ModelLoadError, match=r"config.json: unknown key colour"):
        load_model(model_copy)


def test_vocabulary_mismatch_between_tokenizer_and_config(model_copy: Path) -> None:
    config = json.loads((model_copy / "config.json").read_text())
    config["src_vocab_size"] += 1
    config["tgt_vocab_size"] += 1
    (model_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="tokenizer vocabulary"):
        load_model(model_copy)


def test_translator_cuts_overlong_input_and_says_so(model_copy: Path) -> None:
    translator = Translator.load(model_copy)
    result = translator.translate("gato " * 500, DecodeOptions())
    assert result.truncated and len(result.src_ids) == translator.max_src_len
    assert result.src_ids[-1] == translator.model.config.eos_id


@pytest.fixture
def meta_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a real ``Transformer`` is built: shapes must be checked on the meta device first."""
    build = Transformer.__init__

    def init(self: Transformer, config: ModelConfig) -> None:
        if torch.empty(0).device.type != "meta":
            raise AssertionError("a real Transformer was built before the config and weights were checked")
        build(self, config)

    monkeypatch.setattr(Transformer, "__init__", init)


def edit_config(model_dir: Path, **changes: object) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    (model_dir / "config.json").write_text(json.dumps(config | changes))


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"n_encoder_layers": 10000}, "model.n_encoder_layers must be at most 64, got 10000"),
        ({"d_model": 10**9}, "model.d_model must be at most 8192, got 1000000000"),
        ({"max_positions": 10**6}, "model.max_positions must be at most 65536"),
        ({"src_vocab_size": 10**7, "tgt_vocab_size": 10**7}, "model.src_vocab_size must be at most 1000000"),
        ({"d_model": 8192, "n_heads": 64, "d_ff": 65536, "n_encoder_layers": 64}, "more than the limit"),
    ],
)
def test_oversized_config_is_refused_before_anything_is_built(
    model_copy: Path, meta_only: None, changes: dict[str, int], says: str
) -> None:
    edit_config(model_copy, **changes)
    with pytest.raises(ModelLoadError, match=rf"config\.json: .*{re.escape(says)}"):
        load_model(model_copy)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm": "post", "positional": "learned"},
        {"share_embeddings": False, "tie_output": False, "tgt_vocab_size": 50, "n_decoder_layers": 3},
    ],
)
def test_the_size_bound_counts_what_the_model_allocates(changes: dict[str, object]) -> None:
    model = Transformer(tiny_config(**changes))
    allocated = sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())
    assert model.config.n_elements == allocated


def test_weights_of_another_shape_are_named_before_the_model_is_built(model_copy: Path, meta_only: None) -> None:
    config = json.loads((model_copy / "config.json").read_text())
    d_model, d_ff = config["d_model"], config["d_ff"]
    edit_config(model_copy, d_ff=2 * d_ff)
    pattern = (
        rf"{re.escape(str(model_copy / 'model.safetensors'))}: tensor encoder_layers\.0\.ffn\.w1\.weight "
        rf"has shape \({d_ff}, {d_model}\), config\.json implies \({2 * d_ff}, {d_model}\)"
    )
    with pytest.raises(ModelLoadError, match=pattern):
        load_model(model_copy)
    edit_config(model_copy, d_ff=d_ff, n_encoder_layers=config["n_encoder_layers"] + 1)
    with pytest.raises(ModelLoadError, match=r"model\.safetensors: weights do not fit config\.json \(missing: \["):
        load_model(model_copy)


def test_shapes_come_from_the_file_header_and_allow_grown_embeddings_only_when_asked(tmp_path: Path) -> None:
    save_model(Transformer(tiny_config()), tmp_path)
    path = tmp_path / "model.safetensors"
    assert file_shapes(path) == expected_shapes(tiny_config())
    grown = expected_shapes(tiny_config(src_vocab_size=41, tgt_vocab_size=41))
    with pytest.raises(ModelLoadError, match=r"tensor src_embed\.weight has shape \(40, 32\).* implies \(41, 32\)"):
        check_shapes(path, grown)
    check_shapes(path, grown, new_rows=True)
    wider = expected_shapes(tiny_config(d_model=64))
    with pytest.raises(ModelLoadError, match=r"src_embed\.weight"):
        check_shapes(path, wider, new_rows=True)
