"""The model picker's choices: the shipped default plus every finished run in the runs folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from model.run_dir import CONFIG_FILE, WEIGHTS_FILE
from translate.translator import DEFAULT_MODEL

MODEL_FILES = (CONFIG_FILE, WEIGHTS_FILE)  # what makes a directory loadable by Translator.load


@dataclass(frozen=True)
class ModelChoice:
    label: str
    path: Path
    available: bool  # False for the shipped default before it exists


def shipped_model() -> Path:
    """The shipped model directory, read by both pages: ``LAB_MODEL_DIR`` when set, else ``DEFAULT_MODEL``."""
    return Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL)


def is_model_dir(path: Path) -> bool:
    """True when ``path`` holds a finished model (config.json and model.safetensors)."""
    return path.is_dir() and all((path / name).is_file() for name in MODEL_FILES)


def find_models(default: Path, runs: Path) -> list[ModelChoice]:
    """The shipped default first (even when missing), then each run directory of ``runs`` holding a model, by name
    (symbolic links are not runs: a link may point anywhere)."""
    choices = [ModelChoice(f"shipped: {default.name}", default, is_model_dir(default))]
    try:
        entries = sorted(runs.iterdir(), key=lambda p: p.name) if runs.is_dir() else []
    except OSError:
        entries = []
    for path in entries:
        if path.name.startswith(".") or path.is_symlink() or path.resolve() == default.resolve():
            continue
        if is_model_dir(path):
            choices.append(ModelChoice(f"run: {path.name}", path, True))
    return choices


def default_index(choices: list[ModelChoice], runs: Path | None = None) -> int:
    """The run recorded as the default in ``runs`` (the Train page's gate), when it is among ``choices``; else the
    first available model (the shipped one when it exists), else 0."""
    chosen = recorded_default(runs) if runs is not None else None
    if chosen is not None:
        for i, choice in enumerate(choices):
            if choice.available and choice.path.resolve() == chosen.resolve():
                return i
    return next((i for i, choice in enumerate(choices) if choice.available), 0)


DEFAULT_CHOICE_FILE = ".default_model.json"  # in the runs folder: the run the Train page's gate made the default


def recorded_default(runs: Path) -> Path | None:
    """The run the Train page made the default ("Use as default model", after the regression gate), when it is
    still a finished model folder of ``runs``; None otherwise (then the shipped model is the default)."""
    try:
        name = json.loads((runs / DEFAULT_CHOICE_FILE).read_text(encoding="utf-8")).get("run")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        return None
    path = runs / name
    return path if not path.is_symlink() and is_model_dir(path) else None


def record_default(runs: Path, run_dir: Path) -> None:
    """Make ``run_dir`` (a folder of ``runs``) the translate page's default model; only after the gate passed."""
    (runs / DEFAULT_CHOICE_FILE).write_text(json.dumps({"run": run_dir.name}) + "\n", encoding="utf-8")
