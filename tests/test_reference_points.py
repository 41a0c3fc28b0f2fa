"""Is my score good? A run beside the copy-the-source floor, its direction's default model and Apertium on the same
dev pairs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from data.corpus import read_pairs_file
from model.run_dir import split_file
from training import reference_points as points
from training.reference_points import main, reference_points
from translate import apertium


def test_every_reference_point_scores_the_same_dev_pairs(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = shutil.copytree(tiny_model_dir, tmp_path / "shipped", ignore=shutil.ignore_patterns("checkpoints"))
    dev = read_pairs_file(split_file(tiny_model_dir, "dev"))[:5]
    seen: list[list[str]] = []

    def references_as_apertium(sources: list[str]) -> list[str]:  # a stand-in that copies the references
        seen.append(sources)
        return [p.tgt for p in dev]

    monkeypatch.setattr(points.apertium, "translate", references_as_apertium)
    found = reference_points(tiny_model_dir, shipped, n=5)
    scores = found["scores"]
    assert found["default"] == str(shipped.resolve()) and found["canaries"] == 8  # the lab's es→en canaries
    assert set(scores) == {
        "this run",
        "copy the source (floor)",
        "default model (shipped)",
        "Apertium spa-eng (rule-based)",
    }
    assert seen == [[p.src for p in dev]]  # the same sentences, in order
    assert scores["Apertium spa-eng (rule-based)"]["bleu"] == pytest.approx(100.0)
    assert scores["this run"] == scores["default model (shipped)"]  # the same weights score the same
    assert all(row["loops"] >= 0 for row in scores.values())
    assert len(scores["this run"]["canaries_wrong"]) == 8 - scores["this run"]["canaries"]


def test_without_apertium_its_row_is_left_out_and_the_file_is_written(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = shutil.copytree(tiny_model_dir, tmp_path / "run", ignore=shutil.ignore_patterns("checkpoints"))
    monkeypatch.setattr(apertium.shutil, "which", lambda name: None)
    assert main(["--run", str(run), "--no-default"]) == 0
    scores = points.json.loads((run / points.REFERENCES_FILE).read_text())["scores"]
    assert set(scores) == {"this run", "copy the source (floor)"}


@pytest.mark.skipif(
    shutil.which("apertium") is None, reason="Apertium is not installed (apt-get install apertium apertium-eng-spa)"
)
def test_the_real_apertium_translates_one_line_per_source() -> None:
    out = apertium.translate(["El gato negro duerme.", "Hola mundo"])
    assert out is not None and len(out) == 2 and all(out)
