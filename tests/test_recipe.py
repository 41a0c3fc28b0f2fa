"""The recipe script end to end on the tiny preset: teacher, distillation, student, export; every step's minutes
recorded; a second run skips what is done; a recipe stopped after a step continues from there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.recipe import RECIPE_FILE, STEPS, load_recipe, main
from translate.translator import Translator

RECIPE = """
corpus = ["{corpus}"]
beam = 2
mix = "both"
[teacher]
config = "configs/tiny.toml"
overrides = ["optim.max_steps=60", "run.eval_every=30", "model.d_model=48", "model.d_ff=96"]
[student]
config = "configs/tiny.toml"
overrides = ["optim.max_steps=40", "run.eval_every=20"]
"""


@pytest.mark.slow
def test_the_recipe_runs_step_by_step_and_records_its_minutes(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture
) -> None:
    recipe, out = tmp_path / "recipe.toml", tmp_path / "recipe"
    recipe.write_text(RECIPE.format(corpus=toy_corpus), encoding="utf-8")
    assert main(["--recipe", str(recipe), "--out", str(out), "--until", "distill"]) == 0
    assert not (out / "student").exists()
    assert main(["--recipe", str(recipe), "--out", str(out)]) == 0  # continues with the student
    record = json.loads((out / RECIPE_FILE).read_text())
    assert list(record["steps"]) == list(STEPS) and all(
        e["minutes"] >= 0 and e["machines"] for e in record["steps"].values()
    )
    report = json.loads((out / "student" / "data_report.json").read_text())
    assert report["added"]["distilled pairs (data.distilled, data.mix = 'both')"] > 0
    assert (out / "teacher" / "splits" / "dev.tsv").read_bytes() == (
        out / "student" / "splits" / "dev.tsv"
    ).read_bytes()
    card = (out / "model" / "MODEL_CARD.md").read_text()
    assert "| teacher |" in card and "| student |" in card and "beam 2" in card
    assert Translator.load(out / "model").translate("El gato rojo 3.").text
    capsys.readouterr()
    assert main(["--recipe", str(recipe), "--out", str(out)]) == 0
    assert capsys.readouterr().out.count("done already") == len(STEPS)


def test_a_bad_recipe_names_the_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    recipe = tmp_path / "recipe.toml"
    recipe.write_text("beam = 'four'\n", encoding="utf-8")
    assert main(["--recipe", str(recipe), "--out", str(tmp_path / "out")]) == 2
    assert f"{recipe}: beam" in capsys.readouterr().err
    assert load_recipe(Path("configs/recipes/distilled.toml")).teacher.overrides  # the shipped recipe parses
