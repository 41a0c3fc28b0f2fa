"""The model picker's choices: the shipped default plus every finished run in the runs folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from model.run_dir import CONFIG_FILE, WEIGHTS_FILE

MODEL_FILES = (CONFIG_FILE, WEIGHTS_FILE)  # what makes a directory loadable by Translator.load


@dataclass(frozen=True)
class ModelChoice:
    label: str
    path: Path
    available: bool  # False for the shipped default before it exists


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


def default_index(choices: list[ModelChoice]) -> int:
    """The first available model (the shipped one when it exists), else 0."""
    return next((i for i, choice in enumerate(choices) if choice.available), 0)
