"""The recipe script end to end on the tiny preset: a teacher, its distillation, a student, a grown child, a soup
and the export; every step's minutes recorded; a second run skips what is done; a recipe stopped after a step
continues from there; a bad recipe is refused naming the file, the step and the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_every_command import run as run_command

from model.config import ModelConfig
from translate.translator import Translator
from workshop.recipe import RECIPE_FILE, load_recipe, main

RECIPE = """
corpus = ["{corpus}"]
[[steps]]
name = "teacher"
kind = "train"
config = "configs/tiny.toml"
overrides = ["optim.max_steps=60", "run.eval_every=30", "model.d_model=48", "model.d_ff=96"]
[[steps]]
name = "distilled"
kind = "distill"
models = ["teacher"]
beam = 2
[[steps]]
name = "student"
kind = "train"
config = "configs/tiny.toml"
overrides = ["optim.max_steps=40", "run.eval_every=20"]
distilled = "distilled"
[[steps]]
name = "deeper"
kind = "train"
config = "configs/tiny.toml"
init_from = "student"
overrides = ["model.n_encoder_layers=2", "optim.max_steps=10", "run.eval_every=10"]
[[steps]]
name = "soup"
kind = "average"
models = ["deeper", "deeper"]
[[steps]]
name = "model"
kind = "export"
run = "soup"
"""
NAMES = ["teacher", "distilled", "student", "deeper", "soup", "model"]


@pytest.mark.slow
def test_the_recipe_runs_step_by_step_and_records_its_minutes(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture
) -> None:
    recipe, out = tmp_path / "recipe.toml", tmp_path / "recipe"
    recipe.write_text(RECIPE.format(corpus=toy_corpus), encoding="utf-8")
    assert main(["--recipe", str(recipe), "--out", str(out), "--until", "distilled"]) == 0
    assert not (out / "student").exists()
    assert main(["--recipe", str(recipe), "--out", str(out)]) == 0  # continues with the student
    record = json.loads((out / RECIPE_FILE).read_text())
    assert list(record["steps"]) == NAMES
    assert all(e["minutes"] >= 0 and e["machines"] for e in record["steps"].values())
    report = json.loads((out / "student" / "data_report.json").read_text())
    assert report["added"]["distilled pairs (workshop student, --mix both)"] > 0
    dev = (out / "teacher" / "splits" / "dev.tsv").read_bytes()
    assert (
        dev
        == (out / "student" / "splits" / "dev.tsv").read_bytes()
        == (out / "deeper" / "splits" / "dev.tsv").read_bytes()
    )
    assert ModelConfig.from_json_file(out / "model" / "config.json").n_encoder_layers == 2  # grown from 1
    deeper, model = Translator.load(out / "deeper"), Translator.load(out / "model")
    text = "El gato rojo 3."
    assert model.translate(text).text == deeper.translate(text).text  # the soup of a model with itself, in fp16
    card = (out / "model" / "MODEL_CARD.md").read_text()
    assert all(f"| {name} |" in card for name in NAMES)
    capsys.readouterr()
    assert main(["--recipe", str(recipe), "--out", str(out)]) == 0
    assert capsys.readouterr().out.count("done already") == len(NAMES)


def write(tmp_path: Path, text: str) -> Path:
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(text, encoding="utf-8")
    return recipe


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[[steps]]\nname = 'd'\nkind = 'distill'\nmodels = ['x']\nbeam = 'four'\n", "steps[0].beam"),
        ("[[steps]]\nname = 'a'\nkind = 'bake'\n", "steps[0].kind"),
        ("corpus = ['c']\n[[steps]]\nname = 's'\nkind = 'train'\ndistilled = 'nowhere'\n", "steps[0] ('s').distilled"),
        (
            "[[steps]]\nname = 'm'\nkind = 'export'\nrun = 'later'\n[[steps]]\nname = 'later'\nkind = 'train'\n",
            "steps[0] ('m').run",
        ),
        ("[[steps]]\nname = 'm'\nkind = 'average'\nmodels = ['checkpoints/es-en']\n", "two models or more"),
        (
            "corpus = ['c']\n[[steps]]\nname = 't'\nkind = 'train'\n[[steps]]\nname = 't'\nkind = 'train'\n",
            "steps[1] ('t')",
        ),
        ("beam = 4\n", "unknown key beam"),
    ],
)
def test_a_bad_recipe_names_the_file_the_step_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture, text: str, named: str
) -> None:
    recipe = write(tmp_path, text)
    assert main(["--recipe", str(recipe), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{recipe}: " in err and named in err
    assert not (tmp_path / "out").exists()


def test_the_shipped_recipes_parse_and_until_names_a_step(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for path in sorted(Path("workshop/recipes").glob("*.toml")):
        assert load_recipe(path).steps, path
    assert main(["--recipe", "workshop/recipes/distilled.toml", "--out", str(tmp_path), "--until", "nope"]) == 2
    assert "no such step" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("lie", "says"),
    [("a FIFO", "a named pipe (FIFO), not a regular file"), ("someone's file", "not the record of a recipe")],
)
def test_a_record_that_is_not_the_recipes_is_one_line_and_kept(tmp_path: Path, lie: str, says: str) -> None:
    record = tmp_path / RECIPE_FILE
    os.mkfifo(record) if lie == "a FIFO" else record.write_text('{"name": "mine"}')
    status, err = run_command("recipe", ["--out", str(tmp_path)], seconds=60)  # was a hang, or a traceback
    assert status == 2 and err.startswith(f"error: {record}: {says}") and err.count("\n") == 1, err
    assert [p.name for p in tmp_path.iterdir()] == [RECIPE_FILE]
    assert lie == "a FIFO" or record.read_text() == '{"name": "mine"}'
