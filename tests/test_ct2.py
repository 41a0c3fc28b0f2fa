"""The CTranslate2 export (workshop/ct2.py) decodes exactly like our PyTorch model; distillation uses it; bad exports
are clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from data.corpus import read_pairs_file
from model.weights import ModelLoadError, save_model
from training.evaluate import score
from translate.model_dir import load_model
from translate.translator import DecodeOptions, Translator
from workshop import ct2
from workshop.__main__ import main as workshop_main
from workshop.ct2 import main as export_main
from workshop.distill import main as distill_main

pytest.importorskip("ctranslate2")  # workshop/ct2.py imports it only when used
INFERENCE_FILES = ("config.json", "model.safetensors", "spm.model")


def inference_copy(run_dir: Path, out: Path) -> Path:
    """The files a model directory needs, copied so that an export can be written inside it."""
    out.mkdir(parents=True)
    for name in INFERENCE_FILES:
        shutil.copy(run_dir / name, out / name)
    return out


@pytest.fixture(scope="module")
def post_norm_model_dir(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Path:
    """The other branch of every choice: post-norm, learned positions, separate and untied embeddings."""
    from training.train import main

    out = tmp_path_factory.mktemp("runs") / "tiny-post"
    overrides = ["--model.norm=post", "--model.positional=learned", "--model.share_embeddings=false"]
    args = ["--config", "configs/tiny.toml", "--corpus", str(toy_corpus), "--out", str(out), "--optim.max_steps=300"]
    assert main([*args, *overrides, "--model.tie_output=false", "--run.eval_every=300"]) == 0
    return out


@pytest.fixture(scope="module", params=["pre-norm", "post-norm"])
def exported(
    request: pytest.FixtureRequest, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Translator, ct2.CT2Translator]:
    """PyTorch and CTranslate2 (float32, default place inside the model directory) translators of one model."""
    run = tiny_model_dir if request.param == "pre-norm" else request.getfixturevalue("post_norm_model_dir")
    model_dir = inference_copy(run, tmp_path_factory.mktemp("ct2") / "model")
    assert workshop_main(["ct2-export", "--model", str(model_dir)]) == 0
    assert (model_dir / ct2.CT2_DIR / "model.bin").is_file()
    return Translator.load(model_dir), ct2.CT2Translator.load(model_dir)


def sources(corpus: Path, n: int) -> list[str]:
    """``n`` Spanish sentences: half from the corpus, half with numbers it never had ("El gato rojo 37.")."""
    seen = [line.split("\t")[0] for line in corpus.read_text(encoding="utf-8").splitlines()][: n - n // 2]
    return seen + [f"{s.rsplit(' ', 1)[0]} {20 + i}." for i, s in enumerate(seen[: n // 2])]


def assert_same_outputs(a: list, b: list) -> None:
    for x, y in zip(a, b, strict=True):
        assert [h.tokens for h in x.candidates] == [h.tokens for h in y.candidates], x.source
        assert [h.truncated for h in x.candidates] == [h.truncated for h in y.candidates], x.source
        for hx, hy in zip(x.candidates, y.candidates, strict=True):
            assert hy.log_prob == pytest.approx(hx.log_prob, abs=1e-3)
            assert hy.score == pytest.approx(hx.score, abs=1e-3)


def test_float32_export_gives_the_pytorch_greedy_tokens(
    exported: tuple[Translator, ct2.CT2Translator], toy_corpus: Path
) -> None:
    """200 sentences, batched as in evaluation; plus an empty source and one longer than max_positions."""
    pytorch, ctranslate2 = exported
    texts = [*sources(toy_corpus, 200), "", "perro " * 80]
    a = pytorch.translate_all(texts, batch_size=64)
    b = ctranslate2.translate_all(texts, batch_size=64)
    assert b[-1].truncated  # the long source was cut like PyTorch's
    assert_same_outputs(a, b)
    assert [t.text for t in a] == [t.text for t in b]


@pytest.mark.parametrize("threads", [(1, 1), (2, 1), (3, 1), (1, 2)])
def test_any_thread_layout_gives_the_same_outputs_in_order(
    exported: tuple[Translator, ct2.CT2Translator], toy_corpus: Path, threads: tuple[int, int]
) -> None:
    """Workers decode shares of a batch in parallel (inter_threads): the outputs come back whole and in order."""
    pytorch, default = exported
    engine = ct2.CT2Translator(pytorch.model, pytorch.tokenizer, default.ct2_dir, threads=threads)
    texts = sources(toy_corpus, 37)
    assert_same_outputs(pytorch.translate_all(texts, batch_size=16), engine.translate_all(texts, batch_size=16))
    assert ct2.engine_threads(2) == (2, 1) and ct2.engine_threads(0) == (1, 1)  # a single-threaded worker per core


def test_length_caps_force_eos_like_pytorch(exported: tuple[Translator, ct2.CT2Translator], toy_corpus: Path) -> None:
    """Each sentence's own cap (a·S + b) ends it with a forced EOS, marked truncated, with the same log-prob."""
    pytorch, ctranslate2 = exported
    texts = [s + " rojo" * (i % 4) for i, s in enumerate(sources(toy_corpus, 40))]  # longer sources, higher caps
    options = DecodeOptions(max_len_a=0.5, max_len_b=3)
    a, b = pytorch.translate_batch(texts, options), ctranslate2.translate_batch(texts, options)
    assert any(t.best.truncated for t in a) and not all(t.best.truncated for t in a)
    assert_same_outputs(a, b)


def test_beam_search_returns_ranked_hypotheses(exported: tuple[Translator, ct2.CT2Translator]) -> None:
    """Beam search is CTranslate2's own (not promised identical); n-best come back best first, EOS last."""
    _, ctranslate2 = exported
    result = ctranslate2.translate("El gato rojo 3.", DecodeOptions(beam_size=4, n_best=3))
    scores = [h.score for h in result.candidates]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    assert all(h.tokens[-1] == ctranslate2.model.config.eos_id for h in result.candidates)


def test_maps_come_from_the_pytorch_model(exported: tuple[Translator, ct2.CT2Translator]) -> None:
    pytorch, ctranslate2 = exported
    sentence = "El perro azul 5."
    maps_a = pytorch.attention(pytorch.translate(sentence))
    maps_b = ctranslate2.attention(ctranslate2.translate(sentence))
    assert torch.equal(maps_a.cross, maps_b.cross) and torch.equal(maps_a.encoder, maps_b.encoder)


def test_the_export_scores_as_pytorch_does(
    exported: tuple[Translator, ct2.CT2Translator], tiny_model_dir: Path
) -> None:
    pytorch, ctranslate2 = exported
    pairs = read_pairs_file(tiny_model_dir / "splits" / "test.tsv")
    assert score(ctranslate2, pairs)["bleu"] == score(pytorch, pairs)["bleu"]


def test_distillation_with_the_export_writes_what_pytorch_decodes(
    exported: tuple[Translator, ct2.CT2Translator], tiny_model_dir: Path, tmp_path: Path
) -> None:
    pytorch, ctranslate2 = exported
    pairs = tmp_path / "train.tsv"
    texts = sources(tiny_model_dir / "splits" / "train.tsv", 40)
    pairs.write_text("".join(f"{s}\tx\n" for s in texts), encoding="utf-8")
    out = tmp_path / "distilled.tsv"
    model_dir = str(ctranslate2.ct2_dir.parent)
    args = ["--teacher", model_dir, "--pairs", str(pairs), "--out", str(out), "--beam", "1"]
    assert distill_main([*args, "--engine", "ctranslate2"]) == 0
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert [src for src, _ in rows] == texts
    assert [tgt for _, tgt in rows] == [" ".join(pytorch.translate(s).text.split()) for s in texts]
    assert json.loads(out.with_name(out.name + ".json").read_text())["engine"] == "ctranslate2"
    assert distill_main([*args, "--engine", "pytorch"]) == 2  # another engine: never mixed into one file


def test_int8_export_is_smaller_and_translates(tiny_model_dir: Path, tmp_path: Path) -> None:
    float32, int8 = tmp_path / "f32", tmp_path / "i8"
    assert export_main(["--model", str(tiny_model_dir), "--out", str(float32)]) == 0
    args = ["--model", str(tiny_model_dir), "--out", str(int8), "--quantization", "int8"]
    assert export_main(args) == 0
    assert (int8 / "model.bin").stat().st_size < (float32 / "model.bin").stat().st_size
    assert json.loads((int8 / ct2.INFO_FILE).read_text())["quantization"] == "int8"
    result = ct2.CT2Translator.load(tiny_model_dir, ct2_dir=int8).translate("El gato rojo 3.")
    assert result.text and result.best.tokens[-1] == 3


def test_missing_or_stale_export_is_a_clear_error(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    model_dir = inference_copy(tiny_model_dir, tmp_path / "model")
    with pytest.raises(ModelLoadError, match=r"no CTranslate2 export found .*workshop ct2-export"):
        ct2.CT2Translator.load(model_dir)
    pairs = tmp_path / "train.tsv"
    pairs.write_text("Hola\tx\n", encoding="utf-8")
    args = [
        "--teacher",
        str(model_dir),
        "--pairs",
        str(pairs),
        "--out",
        str(tmp_path / "d.tsv"),
        "--engine",
        "ctranslate2",
    ]
    assert distill_main(args) == 2
    assert "ctranslate2: no CTranslate2 export found" in capsys.readouterr().err
    ct2.export(model_dir)
    loaded = load_model(model_dir)
    with torch.no_grad():
        loaded.model.output.weight.mul_(1.01)
    save_model(loaded.model, model_dir)  # weights changed after the export
    with pytest.raises(
        ModelLoadError, match=r"exported from other weights .*\(re-export with: python -m workshop ct2-export"
    ):
        ct2.CT2Translator.load(model_dir)


def test_export_never_replaces_a_directory_that_is_not_an_export(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    model_dir = inference_copy(tiny_model_dir, tmp_path / "model")
    assert export_main(["--model", str(model_dir), "--out", str(model_dir)]) == 2
    assert "is not a CTranslate2 export" in capsys.readouterr().err
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(INFERENCE_FILES)
