"""Is my score good? A run beside the copy-the-source floor and its direction's default model on the same dev
pairs."""

from __future__ import annotations

import shutil
from pathlib import Path

from training import reference_points as points
from training.reference_points import main, reference_points


def test_every_reference_point_scores_the_same_dev_pairs(tiny_model_dir: Path, tmp_path: Path) -> None:
    shipped = shutil.copytree(tiny_model_dir, tmp_path / "shipped", ignore=shutil.ignore_patterns("checkpoints"))
    found = reference_points(tiny_model_dir, shipped, n=5)
    scores = found["scores"]
    assert found["default"] == str(shipped.resolve()) and found["canaries"] == 8  # the lab's es→en canaries
    assert set(scores) == {"this run", "copy the source (floor)", "default model (shipped)"}
    assert scores["this run"] == scores["default model (shipped)"]  # the same weights score the same
    assert all(row["loops"] >= 0 for row in scores.values())
    assert len(scores["this run"]["canaries_wrong"]) == 8 - scores["this run"]["canaries"]


def test_without_a_default_the_file_is_written(tiny_model_dir: Path, tmp_path: Path) -> None:
    run = shutil.copytree(tiny_model_dir, tmp_path / "run", ignore=shutil.ignore_patterns("checkpoints"))
    assert main(["--run", str(run), "--no-default"]) == 0
    scores = points.json.loads((run / points.REFERENCES_FILE).read_text())["scores"]
    assert set(scores) == {"this run", "copy the source (floor)"}
