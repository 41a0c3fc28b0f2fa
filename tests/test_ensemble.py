"""Ensemble decoding (workshop/ensemble.py): an ensemble of one, or of two copies of a model, decodes exactly as the
model (greedy and beam); members must share a vocabulary; distillation takes several --teacher directories."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from conftest import tiny_config

from model.config import ConfigError
from model.decode import beam_search, greedy
from model.transformer import Transformer
from model.weights import ModelLoadError
from translate.translator import Translator
from workshop.distill import main as distill
from workshop.ensemble import Ensemble, load_ensemble


def model(seed: int, **changes: object) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(tiny_config(**changes)).eval()


SRC = torch.tensor([[5, 9, 12, 7, 2, 0], [8, 3, 2, 0, 0, 0]])  # (B, S), 2 = EOS, 0 = padding


@pytest.mark.parametrize("copies", [1, 2])
def test_an_ensemble_of_copies_decodes_as_the_model(copies: int) -> None:
    one = model(0)
    ensemble = Ensemble([one] * copies)
    for a, b in zip(greedy(one, SRC), greedy(ensemble, SRC), strict=True):
        assert a.tokens == b.tokens and a.log_prob == pytest.approx(b.log_prob, abs=1e-5)
    for row_a, row_b in zip(beam_search(one, SRC, 3, n_best=2), beam_search(ensemble, SRC, 3, n_best=2), strict=True):
        assert [h.tokens for h in row_a] == [h.tokens for h in row_b]
        assert [h.score for h in row_a] == pytest.approx([h.score for h in row_b], abs=1e-5)


def test_two_models_average_their_log_probabilities() -> None:
    a, b = model(0), model(1, d_model=48, n_heads=4, d_ff=96)  # another shape, the same vocabulary
    ensemble = Ensemble([a, b])
    memory, mask, _ = ensemble.encode(SRC)
    assert memory.shape[-1] == 32 + 48
    caches = ensemble.start_caches(memory, 8)
    bos = torch.full((2, 1), a.config.bos_id)
    mean = ensemble.decode_step(bos, caches, mask).logits
    expected = []
    for m in (a, b):
        m_memory, m_mask, _ = m.encode(SRC)
        expected.append(m.decode_step(bos, m.start_caches(m_memory, 8), m_mask).logits.log_softmax(-1))
    torch.testing.assert_close(mean, (expected[0] + expected[1]) / 2)
    hyps = greedy(ensemble, SRC)
    assert all(h.tokens[-1] == a.config.eos_id for h in hyps)


def test_members_must_share_a_vocabulary() -> None:
    with pytest.raises(ConfigError, match=r"disagree on model\.src_vocab_size \(40 and 41\)"):
        Ensemble([model(0), model(1, src_vocab_size=41, tgt_vocab_size=41)])
    with pytest.raises(ConfigError, match="at least one"):
        Ensemble([])


def test_distillation_takes_several_teachers(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sentence = "El gato rojo 3."
    pairs, out = tmp_path / "train.tsv", tmp_path / "distilled.tsv"
    pairs.write_text(f"{sentence}\tx\n", encoding="utf-8")
    teachers = ["--teacher", str(tiny_model_dir), "--teacher", str(tiny_model_dir)]
    assert distill([*teachers, "--pairs", str(pairs), "--out", str(out), "--beam", "1"]) == 0
    one = Translator.load(tiny_model_dir).translate(sentence).text
    assert out.read_text(encoding="utf-8") == f"{sentence}\t{' '.join(one.split())}\n"
    refused = [*teachers, "--pairs", str(pairs), "--out", str(tmp_path / "other.tsv"), "--engine", "ctranslate2"]
    assert distill(refused) == 2
    assert "pytorch engine only" in capsys.readouterr().err
    ensemble = load_ensemble([tiny_model_dir, tiny_model_dir])
    with pytest.raises(ValueError, match="no attention maps"):
        ensemble.attention(ensemble.translate(sentence))


def test_members_with_other_tokenizers_are_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for name in ("config.json", "model.safetensors"):
        (other / name).write_bytes((tiny_model_dir / name).read_bytes())
    proto = bytearray((tiny_model_dir / "spm.model").read_bytes())
    from sentencepiece import sentencepiece_model_pb2 as pb

    spm = pb.ModelProto.FromString(bytes(proto))
    spm.pieces[-1].score -= 1.0  # another vocabulary, same size
    (other / "spm.model").write_bytes(spm.SerializeToString())
    with pytest.raises(ModelLoadError, match="tokenizer differs"):
        load_ensemble([tiny_model_dir, other])
    assert dataclasses.is_dataclass(load_ensemble([tiny_model_dir]).model.config)
