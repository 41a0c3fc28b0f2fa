"""``python -m workshop recipe``: a model's whole recipe, from the corpus, as named steps run in order.

A recipe is a TOML file (``workshop/recipes/``): the corpus and a list of ``[[steps]]``. Each step writes
``OUT/NAME`` and may use the output of an earlier step by its name:

- **train**: a training run (``training.train``) from a preset and overrides; ``init_from`` the model it starts from
  (its split is kept), ``distilled`` a distill step whose translations it also learns from (``workshop.student``);
- **distill**: a teacher (``models``: one, or several as an ensemble) re-translates the training pairs of
  ``pairs`` (default: the first teacher's) into ``OUT/NAME.tsv`` (``workshop.distill``);
- **average**: the mean of ``models``' weights (``workshop.average``: a model soup);
- **export**: a run as a shippable model directory (``training.export``, float16 by default).

A step whose output is complete is skipped, a stopped one continued (training resumes exactly; distillation
continues after its last line), so a recipe runs across sessions with the same command. The minutes of every step,
and the machine they ran on (GPU name or CPU model), are printed and kept in ``OUT/recipe.json``; the last step's
model gets them in its ``MODEL_CARD.md``. ``--until NAME`` stops after that step.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from data.corpus import write_pairs
from data.readers import ReadReport
from model.bounded_read import MAX_SETTINGS_BYTES, read_json, read_text
from model.config import ConfigError
from model.run_dir import CONFIG_FILE, MODEL_CARD_FILE, RESULT_FILE, STATE_FILE, TRAIN_CONFIG_FILE, split_file
from model.typed_config import from_dict
from training.export import main as export
from training.prepare import load_and_split
from training.train import main as train
from training.train_config import read_saved_config
from workshop.average import main as average
from workshop.ct2 import CT2_DIR
from workshop.ct2 import main as ct2_export
from workshop.distill import main as distill
from workshop.distill import side_car
from workshop.student import Mix, train_student

RECIPE_FILE = "recipe.json"
DEFAULT_RECIPE = Path("workshop/recipes/distilled.toml")
MEMBERS = {"distill": (1, "a teacher"), "average": (2, "two models or more")}  # kind → fewest models, in words


@dataclass(frozen=True)
class Step:
    name: str  # its output: OUT/NAME (a run or model directory; OUT/NAME.tsv for distill)
    kind: Literal["train", "distill", "average", "export"]
    config: str = "configs/small.toml"  # train: the preset
    overrides: tuple[str, ...] = ()  # train: section.key=value, as on training.train's command line
    init_from: str = ""  # train: the model it starts from (an earlier step's name, or a directory)
    distilled: str = ""  # train: a distill step's name: the student learns from its translations too
    mix: Mix = "both"  # train, with distilled: workshop.student's --mix
    models: tuple[str, ...] = ()  # distill: the teacher (several: an ensemble); average: the members
    pairs: str = ""  # distill: the run whose training pairs are translated (default: the first teacher)
    beam: int = 4  # distill
    engine: Literal["pytorch", "ctranslate2"] = "pytorch"  # distill; ctranslate2 exports the teacher first (int8)
    run: str = ""  # export: the run
    dtype: Literal["float16", "float32", "bfloat16"] = "float16"  # export


@dataclass(frozen=True)
class Recipe:
    corpus: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()


def load_recipe(path: Path) -> Recipe:
    """The recipe in ``path``, checked: known keys and types, unique names, each reference to an earlier step or an
    existing directory. Raises ConfigError naming the file and the step."""
    try:
        text = read_text(Path(path), MAX_SETTINGS_BYTES, ConfigError)
    except ConfigError as err:
        raise ConfigError(f"recipe {err}") from None
    try:
        recipe = from_dict(Recipe, tomllib.loads(text))
        check_references(recipe)
    except (tomllib.TOMLDecodeError, ConfigError) as err:
        raise ConfigError(f"{path}: {err}") from None
    return recipe


def check_references(recipe: Recipe) -> None:
    if not recipe.steps:
        raise ConfigError("no [[steps]]")
    earlier: dict[str, str] = {}  # name → kind
    for i, step in enumerate(recipe.steps):
        where = f"steps[{i}] ({step.name!r})"
        if not step.name or "/" in step.name or step.name in earlier:
            raise ConfigError(f"{where}: a step needs a name of its own (a folder name, unique in the recipe)")
        wanted = {
            "train": [("init_from", step.init_from, False), ("distilled", step.distilled, True)],
            "distill": [("models", m, False) for m in step.models] + [("pairs", step.pairs, False)],
            "average": [("models", m, False) for m in step.models],
            "export": [("run", step.run, False)],
        }[step.kind]
        for key, ref, distilled in wanted:
            if ref and ref not in earlier and (distilled or not Path(ref).is_dir()):
                raise ConfigError(f"{where}.{key}: {ref!r} is neither an earlier step nor a directory")
            if ref in earlier and (earlier[ref] == "distill") != distilled:
                raise ConfigError(f"{where}.{key}: {ref!r} is a {earlier[ref]} step")
        least, what = MEMBERS.get(step.kind, (0, ""))
        if len(step.models) < least:
            raise ConfigError(f"{where}.models: a {step.kind} step needs {what}")
        if step.kind == "export" and not step.run:
            raise ConfigError(f"{where}.run: which run to export")
        if step.kind == "train" and not (recipe.corpus or any(o.startswith("data.corpora") for o in step.overrides)):
            raise ConfigError(f"{where}: no corpus (set corpus = [...] at the top of the recipe)")
        earlier[step.name] = step.kind


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
        self.by_name = {step.name: step for step in recipe.steps}
        self.record_file = out / RECIPE_FILE
        self.record = read_json(self.record_file, ConfigError) if os.path.lexists(self.record_file) else {"steps": {}}
        if not isinstance(self.record, dict) or not isinstance(self.record.get("steps"), dict):
            raise ConfigError(f"{self.record_file}: not the record of a recipe (no steps); not written over: move it")

    def path(self, ref: str) -> Path:
        """Where a step's output lies (OUT/NAME, or OUT/NAME.tsv for distill), or ``ref`` itself, a directory."""
        if ref not in self.by_name:
            return Path(ref)
        return self.out / (f"{ref}.tsv" if self.by_name[ref].kind == "distill" else ref)

    def done(self, step: Step) -> bool:
        """Whether ``step``'s output is complete (a stopped step is continued, not skipped)."""
        out = self.path(step.name)
        if step.kind == "train":
            return (out / RESULT_FILE).is_file()
        if step.kind == "distill":
            meta = out.with_name(out.name + ".json")
            return meta.is_file() and side_car(meta).get("complete", False)
        return (out / CONFIG_FILE).is_file()  # average and export write their folder whole, at the end

    def run(self, step: Step) -> int:
        """Run ``step`` (or report it done); its minutes are added to the record."""
        if self.done(step):
            minutes = self.record["steps"].get(step.name, {}).get("minutes", "?")
            print(f"[recipe] {step.name}: done already ({minutes} min)")
            return 0
        action: Callable[[Step], int] = getattr(self, f"_{step.kind}")
        print(f"[recipe] {step.name}: {step.kind} …")
        start = time.perf_counter()
        status = action(step)
        minutes = (time.perf_counter() - start) / 60
        entry = self.record["steps"].setdefault(step.name, {"kind": step.kind, "minutes": 0.0, "machines": []})
        entry["minutes"] = round(entry["minutes"] + minutes, 2)
        if machine() not in entry["machines"]:
            entry["machines"].append(machine())
        self.out.mkdir(parents=True, exist_ok=True)
        self.record_file.write_text(json.dumps(self.record, indent=2) + "\n", encoding="utf-8")
        print(
            f"[recipe] {step.name}: {'finished' if status == 0 else f'stopped (exit {status})'} in "
            f"{minutes:.1f} min on {machine()}"
        )
        if status == 0 and step.kind == "export" and step is self.recipe.steps[-1]:
            self.write_card(self.path(step.name) / MODEL_CARD_FILE)
        return status

    def _train(self, step: Step) -> int:
        run_dir = self.path(step.name)
        if (run_dir / STATE_FILE).is_file():
            return train(["--out", str(run_dir), "--resume"])
        extra = [f"run.init_from={str(self.path(step.init_from))!r}"] if step.init_from else []
        corpora = [a for c in self.recipe.corpus for a in ("--corpus", c)]
        overrides = [f"--{o.removeprefix('--')}" for o in (*step.overrides, *extra)]
        argv = ["--config", step.config, *corpora, "--out", str(run_dir), *overrides]
        return train_student(argv, self.path(step.distilled), step.mix) if step.distilled else train(argv)

    def _distill(self, step: Step) -> int:
        teachers = [self.path(m) for m in step.models]
        if step.engine == "ctranslate2" and not (teachers[0] / CT2_DIR).is_dir():
            status = ct2_export(["--model", str(teachers[0]), "--quantization", "int8"])
            if status != 0:
                return status
        args = [a for t in teachers for a in ("--teacher", str(t))]
        pairs = self.training_pairs(self.path(step.pairs) if step.pairs else teachers[0])
        return distill(
            [
                *args,
                "--pairs",
                str(pairs),
                "--out",
                str(self.path(step.name)),
                "--beam",
                str(step.beam),
                "--engine",
                step.engine,
            ]
        )

    def training_pairs(self, model: Path) -> Path:
        """The training pairs of ``model``: its run's ``splits/train.tsv``; for a model directory without splits,
        its split made again from its ``train_config.json`` into ``OUT/train.tsv``."""
        if split_file(model, "train").is_file():
            return split_file(model, "train")
        config = read_saved_config(model / TRAIN_CONFIG_FILE)
        pairs = self.out / "train.tsv"
        self.out.mkdir(parents=True, exist_ok=True)
        write_pairs(load_and_split(config.data, ReadReport()).train, pairs)
        return pairs

    def _average(self, step: Step) -> int:
        members = [a for m in step.models for a in ("--model", str(self.path(m)))]
        return average([*members, "--out", str(self.path(step.name))])

    def _export(self, step: Step) -> int:
        return export(["--run", str(self.path(step.run)), "--out", str(self.path(step.name)), "--dtype", step.dtype])

    def write_card(self, path: Path) -> None:
        """The recipe section of the exported model's card: what each step took, on which machine."""
        rows = [
            f"| {name} | {e['kind']} | {e['minutes']:.1f} | {', '.join(e['machines'])} |"
            for name, e in self.record["steps"].items()
        ]
        total = sum(e["minutes"] for e in self.record["steps"].values())
        text = "\n".join(
            [
                "# Model card",
                "",
                "## Recipe (python -m workshop recipe)",
                "",
                "| step | kind | minutes | machine |",
                "|---|---|---:|---|",
                *rows,
                f"| all | | {total:.1f} | |",
                "",
            ]
        )
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop recipe", description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=DEFAULT_RECIPE, help="the recipe (TOML)")
    parser.add_argument("--out", type=Path, required=True, help="folder of the recipe's runs and files")
    parser.add_argument("--until", metavar="NAME", help="stop after this step (default: the last)")
    args = parser.parse_args(argv)
    try:
        recipe = load_recipe(args.recipe)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    names = [step.name for step in recipe.steps]
    if args.until and args.until not in names:
        print(
            f"error: --until {args.until}: no such step in {args.recipe} (steps: {', '.join(names)})", file=sys.stderr
        )
        return 2
    steps = Steps(recipe, args.out)
    for step in recipe.steps[: names.index(args.until or names[-1]) + 1]:
        status = steps.run(step)
        if status != 0:
            return status
    total = sum(e["minutes"] for e in steps.record["steps"].values())
    print(
        f"[recipe] {total:.1f} minutes in all: "
        + ", ".join(f"{name} {e['minutes']:.1f}" for name, e in steps.record["steps"].items())
    )
    return 0
