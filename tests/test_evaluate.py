"""``python -m training.evaluate``: sacrebleu scores, hypothesis and JSON files, and errors that name the files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from training.evaluate import EvaluationError, corpus_scores, main

ROOT = Path(__file__).resolve().parent.parent


def split_columns(pairs: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The source and reference columns of a ``src<TAB>ref`` file as two line-aligned files."""
    rows = [line.split("\t") for line in pairs.read_text(encoding="utf-8").splitlines()]
    src, ref = tmp_path / "test.es", tmp_path / "test.en"
    src.write_text("".join(r[0] + "\n" for r in rows), encoding="utf-8")
    ref.write_text("".join(r[1] + "\n" for r in rows), encoding="utf-8")
    return src, ref


def test_corpus_scores_perfect_and_empty_output() -> None:
    refs = ["The red cat 3.", "The blue dog 7."]
    perfect = corpus_scores(refs, refs)
    assert perfect["bleu"] == 100.0 and perfect["chrf"] == 100.0 and perfect["hyp_ref_len_ratio"] == 1.0
    assert perfect["bleu_signature"].startswith("nrefs:1|") and "version:" in perfect["chrf_signature"]
    assert corpus_scores(["", ""], refs)["bleu"] == 0.0
    with pytest.raises(EvaluationError, match="1 hypotheses for 2 references"):
        corpus_scores(refs[:1], refs)


@pytest.mark.slow
def test_cli_scores_the_test_split_like_training_did(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The module's own entry point; greedy scores equal those the training run wrote for the same split."""
    hyp, report = tmp_path / "test.hyp", tmp_path / "report.json"
    cmd = [
        sys.executable,
        "-m",
        "training.evaluate",
        "--model",
        str(tiny_model_dir),
        "--device",
        "cpu",
        "--pairs",
        str(tiny_model_dir / "splits" / "test.tsv"),
        "--hyp",
        str(hyp),
        "--json",
        str(report),
    ]
    result = subprocess.run(
        cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    scores = json.loads(report.read_text())
    assert f"BLEU {scores['bleu']:.2f}  {scores['bleu_signature']}" in result.stdout
    assert f"chrF {scores['chrf']:.2f}  {scores['chrf_signature']}" in result.stdout
    trained = json.loads((tiny_model_dir / "metrics.json").read_text())["test_greedy"]
    assert (scores["bleu"], scores["chrf"], scores["sentences"]) == (
        trained["bleu"],
        trained["chrf"],
        trained["sentences"],
    )
    assert scores["bleu"] > 0 and scores["sentences_per_s"] > 0 and scores["beam_size"] == 1
    assert hyp.read_text(encoding="utf-8").splitlines() == (tiny_model_dir / "test.hyp").read_text().splitlines()


def test_src_ref_files_and_beam(tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, ref = split_columns(tiny_model_dir / "splits" / "test.tsv", tmp_path)
    hyp, report = tmp_path / "beam.hyp", tmp_path / "beam.json"
    args = [
        "--model",
        str(tiny_model_dir),
        "--src",
        str(src),
        "--ref",
        str(ref),
        "--beam",
        "3",
        "--length-penalty",
        "0.6",
        "--batch-size",
        "4",
        "--device",
        "cpu",
        "--hyp",
        str(hyp),
        "--json",
        str(report),
    ]
    assert main(args) == 0
    scores = json.loads(report.read_text())
    assert (scores["beam_size"], scores["length_penalty"], scores["batch_size"]) == (3, 0.6, 4)
    assert scores["bleu"] > 0 and scores["sentences"] == len(ref.read_text().splitlines())
    hyps = hyp.read_text(encoding="utf-8").splitlines()
    assert corpus_scores(hyps, ref.read_text().splitlines())["bleu"] == scores["bleu"]
    assert "nrefs:1" in capsys.readouterr().out


def test_errors_name_the_files(tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, ref = split_columns(tiny_model_dir / "splits" / "test.tsv", tmp_path)
    missing_model = tmp_path / "no-model"
    assert main(["--model", str(missing_model), "--src", str(src), "--ref", str(ref)]) == 2
    assert f"{missing_model}: model directory not found" in capsys.readouterr().err

    assert main(["--model", str(tiny_model_dir), "--src", str(tmp_path / "nope.es"), "--ref", str(ref)]) == 2
    assert f"{tmp_path / 'nope.es'}: file not found" in capsys.readouterr().err

    short = tmp_path / "short.en"
    short.write_text("The red cat 3.\n")
    n = len(src.read_text().splitlines())
    assert main(["--model", str(tiny_model_dir), "--src", str(src), "--ref", str(short)]) == 2
    err = capsys.readouterr().err
    assert f"{src} has {n} lines" in err and f"{short} has 1" in err

    bad_pairs = tmp_path / "bad.tsv"
    bad_pairs.write_text("El gato rojo 3.\tThe red cat 3.\nsin traducción\n")
    assert main(["--model", str(tiny_model_dir), "--pairs", str(bad_pairs)]) == 2
    assert f"{bad_pairs}:2" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args", [[], ["--src", "a"], ["--pairs", "p", "--src", "a", "--ref", "b"], ["--pairs", "p", "--beam", "0"]]
)
def test_inconsistent_arguments_are_usage_errors(args: list[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", str(tmp_path), *args])
    assert exit_info.value.code == 2


def test_bench_quality_prints_clean_and_typed_with_signatures_and_writes_json(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m workshop bench quality`` end to end on the tiny model: its own test split regenerated and checked,
    clean and typed side by side, the signatures of the metrics that scored them, the everyday list."""
    from workshop.bench.quality import main as quality

    phrases = tmp_path / "phrases.tsv"
    phrases.write_text("El gato rojo 3.\tThe red cat 3.\n", encoding="utf-8")
    out = tmp_path / "quality.json"
    quality(
        ["--model", str(tiny_model_dir), "--beams", "1", "--limit", "5", "--phrases", str(phrases), "--json", str(out)]
    )
    printed = capsys.readouterr().out
    assert "| this model, greedy |" in printed and "BLEU: nrefs:1|case:mixed|eff:no|tok:13a" in printed
    report = json.loads(out.read_text())
    assert report["sentences"] == 5 and report["bleu_signature"].startswith("nrefs:1|")
    assert [r["system"] for r in report["rows"]] == [r["system"] for r in report["typed_rows"]]
    assert report["everyday"]["phrases"] == 1


@pytest.mark.skipif(
    shutil.which("apertium") is None, reason="Apertium is not installed (apt-get install apertium apertium-eng-spa)"
)
def test_the_bench_s_real_apertium_translates_one_line_per_source() -> None:
    from workshop.bench import apertium

    out = apertium.translate(["El gato negro duerme.", "Hola mundo"])
    assert out is not None and len(out) == 2 and all(out)
