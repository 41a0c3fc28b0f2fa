"""``python -m training.recipe``: the whole recipe of a distilled model, from the corpus, step by step.

1. **teacher**: train a (wider) teacher, or take existing model directories as an ensemble teacher;
2. **distill**: the teacher re-translates the training sources (``training.distill``);
3. **student**: train the shipped shape on them (``data.distilled``, ``data.mix``), on the teacher's split;
4. **export**: the student as a model directory (float16), whose MODEL_CARD.md records the recipe.

Each step is skipped when its output is complete and continued when it was stopped (training resumes exactly;
distillation continues after its last line), so the recipe can run across sessions. The minutes of every step, and
the machine they ran on, are printed and kept in ``OUT/recipe.json``. A recipe is a TOML file
(``configs/recipes/distilled.toml``); ``--until STEP`` stops after that step.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from data.corpus import write_pairs
from data.readers import ReadReport
from model.config import ConfigError
from model.run_dir import CONFIG_FILE, RESULT_FILE, STATE_FILE, TRAIN_CONFIG_FILE, split_file
from model.typed_config import from_dict
from training.distill import main as distill
from training.export import main as export
from training.prepare import load_and_split
from training.train import main as train
from training.train_config import build_train_config

STEPS = ("teacher", "distill", "student", "export")
RECIPE_FILE = "recipe.json"


@dataclass(frozen=True)
class TrainStep:
    config: str = "configs/small.toml"  # the preset
    overrides: tuple[str, ...] = ()  # section.key=value, as on training.train's command line
    models: tuple[str, ...] = ()  # teacher only: existing model directories (an ensemble) instead of training one


@dataclass(frozen=True)
class Recipe:
    corpus: tuple[str, ...] = ()
    teacher: TrainStep = field(default_factory=TrainStep)
    student: TrainStep = field(default_factory=TrainStep)
    beam: int = 4  # the teacher's beam when distilling
    mix: Literal["original", "distilled", "both"] = "both"  # data.mix of the student


def load_recipe(path: Path) -> Recipe:
    try:
        return from_dict(Recipe, tomllib.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(f"{path}: recipe not found") from None
    except (tomllib.TOMLDecodeError, ConfigError) as err:
        raise ConfigError(f"{path}: {err}") from None


def machine() -> str:
    """The GPU, else the CPU model, the minutes of a step were spent on."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")
    return f"CPU: {cpu or platform.processor() or platform.machine()}"


class Steps:
    """The recipe's steps over one output folder, with the record of what each took."""

    def __init__(self, recipe: Recipe, out: Path) -> None:
        self.recipe, self.out = recipe, out
        self.record_file = out / RECIPE_FILE
        self.record = json.loads(self.record_file.read_text()) if self.record_file.is_file() else {"steps": {}}

    @property
    def teacher_dirs(self) -> list[Path]:
        return [Path(m) for m in self.recipe.teacher.models] or [self.out / "teacher"]

    @property
    def distilled(self) -> Path:
        return self.out / "distilled.tsv"

    def done(self, step: str) -> bool:
        """Whether ``step``'s output is complete (a stopped step is continued, not skipped)."""
        if step == "teacher":
            return bool(self.recipe.teacher.models) or (self.out / "teacher" / RESULT_FILE).is_file()
        if step == "distill":
            meta = self.distilled.with_name(self.distilled.name + ".json")
            return meta.is_file() and json.loads(meta.read_text(encoding="utf-8")).get("complete", False)
        if step == "student":
            return (self.out / "student" / RESULT_FILE).is_file()
        return (self.out / "model" / CONFIG_FILE).is_file()

    def run(self, step: str) -> int:
        """Run ``step`` (or report it done); its minutes are added to the record."""
        if self.done(step):
            print(f"[recipe] {step}: done already ({self.record['steps'].get(step, {}).get('minutes', '?')} min)")
            return 0
        action: Callable[[], int] = getattr(self, f"_{step}")
        start = time.perf_counter()
        status = action()
        minutes = (time.perf_counter() - start) / 60
        entry = self.record["steps"].setdefault(step, {"minutes": 0.0, "machines": []})
        entry["minutes"] = round(entry["minutes"] + minutes, 2)
        if machine() not in entry["machines"]:
            entry["machines"].append(machine())
        self.out.mkdir(parents=True, exist_ok=True)
        self.record_file.write_text(json.dumps(self.record, indent=2) + "\n", encoding="utf-8")
        print(f"[recipe] {step}: {'finished' if status == 0 else f'stopped (exit {status})'} in {minutes:.1f} min "
              f"on {machine()}")  # fmt: skip
        return status

    def _train(self, step: TrainStep, run_dir: Path, extra: list[str]) -> int:
        if (run_dir / STATE_FILE).is_file():
            return train(["--out", str(run_dir), "--resume"])
        corpora = [a for c in self.recipe.corpus for a in ("--corpus", c)]
        overrides = [f"--{o.removeprefix('--')}" for o in (*step.overrides, *extra)]
        return train(["--config", step.config, *corpora, "--out", str(run_dir), *overrides])

    def _teacher(self) -> int:
        return self._train(self.recipe.teacher, self.out / "teacher", [])

    def _distill(self) -> int:
        pairs = self.teacher_pairs()
        teachers = [a for d in self.teacher_dirs for a in ("--teacher", str(d))]
        return distill(
            [*teachers, "--pairs", str(pairs), "--out", str(self.distilled), "--beam", str(self.recipe.beam)]
        )

    def teacher_pairs(self) -> Path:
        """The training pairs the teacher translates: its run's ``splits/train.tsv``; for a shipped model directory
        (no splits), its split made again from its ``train_config.json`` into ``OUT/train.tsv``."""
        first = self.teacher_dirs[0]
        if split_file(first, "train").is_file():
            return split_file(first, "train")
        config = build_train_config(json.loads((first / TRAIN_CONFIG_FILE).read_text(encoding="utf-8")))
        pairs = self.out / "train.tsv"
        self.out.mkdir(parents=True, exist_ok=True)
        write_pairs(load_and_split(config.data, ReadReport()).train, pairs)
        return pairs

    def _student(self) -> int:
        extra = [f"data.distilled={str(self.distilled)!r}", f"data.mix={self.recipe.mix!r}"]
        return self._train(self.recipe.student, self.out / "student", extra)

    def _export(self) -> int:
        status = export(["--run", str(self.out / "student"), "--out", str(self.out / "model")])
        if status == 0:
            self.write_card(self.out / "model" / "MODEL_CARD.md")
        return status

    def write_card(self, path: Path) -> None:
        """The recipe section of the exported model's card: what each step took, on which machine."""
        rows = [f"| {step} | {e['minutes']:.1f} | {', '.join(e['machines'])} |"
                for step, e in self.record["steps"].items()]  # fmt: skip
        teacher = ", ".join(map(str, self.teacher_dirs))
        text = "\n".join([
            "# Model card", "", "## Recipe (python -m training.recipe)", "",
            f"Teacher: {teacher}; distilled with beam {self.recipe.beam}; student data.mix = {self.recipe.mix!r}.",
            "", "| step | minutes | machine |", "|---|---:|---|", *rows, "",
        ])  # fmt: skip
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.recipe", description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=Path("configs/recipes/distilled.toml"), help="the recipe (TOML)")
    parser.add_argument("--out", type=Path, required=True, help="folder of the recipe's runs and files")
    parser.add_argument("--until", choices=STEPS, default=STEPS[-1], help="stop after this step")
    args = parser.parse_args(argv)
    try:
        recipe = load_recipe(args.recipe)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    steps = Steps(recipe, args.out)
    for step in STEPS[: STEPS.index(args.until) + 1]:
        if step == "teacher" and recipe.teacher.models:
            print(f"[recipe] teacher: the ensemble of {', '.join(recipe.teacher.models)}")
            continue
        status = steps.run(step)
        if status != 0:
            return status
    total = sum(e["minutes"] for e in steps.record["steps"].values())
    print(f"[recipe] {total:.1f} minutes in all: " + ", ".join(
        f"{s} {e['minutes']:.1f}" for s, e in steps.record["steps"].items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
