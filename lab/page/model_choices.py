"""The model picker's choices: the shipped default plus every run of the runs folder that holds a network, finished
or stopped before its end (its best checkpoint so far, marked "stopped at step N")."""

from __future__ import annotations

import json
import os
from collections.abc import Container, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.page.direction import languages
from model.bounded_read import read_bytes, read_json
from model.run_dir import METRICS_LOG_FILE
from model.weights import ModelLoadError
from translate.model_dir import MODEL_FILES as MODEL_FILES  # re-exported: the app's tests name it here
from translate.model_dir import holds_network, network_config, weights_dir
from translate.settings import REPO_ROOT, repo_relative
from translate.translator import DEFAULT_MODEL

KEPT_MODEL = "kept_model"  # the page's session key for the picked model's folder, kept while the Train page runs
TAIL_BYTES = 16_384  # of metrics.jsonl: enough for its last records, however long the run
SHIPPED_DIR = REPO_ROOT / "checkpoints"  # the shipped models, one per direction (es-en, en-es)


@dataclass(frozen=True)
class ModelChoice:
    label: str
    path: Path
    available: bool  # False for the shipped default before it exists
    stopped_at: int | None = None  # a run stopped before its end: its last step (its best checkpoint is loaded)
    refused: str = ""  # why a folder holding a network cannot be loaded (its config.json), shown instead of it


def shipped_model() -> Path:
    """The shipped model directory, read by both pages: ``LAB_MODEL_DIR`` when set, else ``DEFAULT_MODEL``."""
    return Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL)


def other_shipped() -> list[Path]:
    """The shipped models (``SHIPPED_DIR``, as ``checkpoints/en-es``) of the directions ``shipped_model()`` is not."""
    first = languages(shipped_model())
    taken = {first.pair if first.known else languages(DEFAULT_MODEL).pair}
    out = []
    for path in sorted(SHIPPED_DIR.iterdir()) if SHIPPED_DIR.is_dir() else ():
        langs = languages(path)
        if langs.known and langs.pair not in taken and not path.is_symlink() and is_model_dir(path):
            out.append(path)
            taken.add(langs.pair)
    return out


def shipped_of(pair: tuple[str, str]) -> Path | None:
    """The shipped model that translates ``pair`` (source, target codes), None when the lab ships none."""
    return next((p for p in [shipped_model(), *other_shipped()] if languages(p).pair == pair and is_model_dir(p)), None)


def is_model_dir(path: Path) -> bool:
    """True when ``path`` holds a finished model (config.json and model.safetensors)."""
    return path.is_dir() and holds_network(path)


def is_usable(path: Path) -> bool:
    """True when ``Translator.load`` finds a network in ``path``: a finished model, or a stopped run's checkpoint."""
    return path.is_dir() and holds_network(weights_dir(path))


def last_step(run_dir: Path) -> int:
    """The last step metrics.jsonl records (read from its tail only); 0 when it records none."""
    try:
        lines = (
            read_bytes(run_dir / METRICS_LOG_FILE, TAIL_BYTES, OSError, tail=True)
            .decode("utf-8", errors="replace")
            .splitlines()
        )
    except OSError:  # missing, or not a regular file (a FIFO there would block the picker)
        return 0
    for line in reversed(lines):
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue  # the first line of the tail is cut; the last may be half-written
        if isinstance(step, int):
            return step
    return 0


def stopped_label(name: str, step: int) -> str:
    return f"run: {name} (stopped at step {step:,})"


def checked(choice: ModelChoice) -> ModelChoice:
    """``choice``, or the same folder marked refused (not available) when its config.json cannot be loaded here."""
    try:
        network_config(weights_dir(choice.path))
    except ModelLoadError as err:
        why = str(err).replace(str(choice.path), repo_relative(choice.path))  # no server path on the page
        return ModelChoice(f"{choice.label} (refused)", choice.path, False, choice.stopped_at, why)
    return choice


def find_models(
    default: Path, runs: Path, training: Container[str] = (), also: Sequence[Path] = ()
) -> list[ModelChoice]:
    """The shipped default first (even when missing), the shipped models of other directions (``also``), then each
    run of ``runs`` holding a network, by name (not those ``training`` now: their checkpoints change at every
    evaluation; not symbolic links: a link may point anywhere); a folder whose config.json is refused, marked."""
    shipped = ModelChoice(f"shipped: {default.name}", default, is_model_dir(default))
    choices = [checked(shipped) if shipped.available else shipped]
    choices += [checked(ModelChoice(f"shipped: {p.name}", p, True)) for p in also]
    try:
        entries = sorted(runs.iterdir(), key=lambda p: p.name) if runs.is_dir() else []
    except OSError:
        entries = []
    shipped_paths = {p.resolve() for p in (default, *also)}
    for path in entries:
        if path.name.startswith(".") or path.is_symlink() or path.resolve() in shipped_paths:
            continue
        if is_model_dir(path):
            choices.append(checked(ModelChoice(f"run: {path.name}", path, True)))
        elif path.name not in training and is_usable(path):
            step = last_step(path)
            choices.append(checked(ModelChoice(stopped_label(path.name, step), path, True, step)))
    return choices


def default_index(choices: list[ModelChoice], runs: Path | None = None) -> int:
    """The run recorded as the default in ``runs`` when it is among ``choices``, else the first available model."""
    chosen = recorded_default(runs) if runs is not None else None
    if chosen is not None:
        for i, choice in enumerate(choices):
            if choice.available and choice.path.resolve() == chosen.resolve():
                return i
    return next((i for i, choice in enumerate(choices) if choice.available), 0)


DEFAULT_CHOICE_FILE = ".default_model.json"  # in the runs folder: the runs "Use as default model" made defaults


def recorded_defaults(runs: Path) -> list[Path]:
    """The runs made defaults on the Train page, one per direction, oldest first; the last is the Translate page's."""
    try:
        data = read_json(runs / DEFAULT_CHOICE_FILE, ValueError)
        names = data.get("runs", [data.get("run")])
    except (OSError, ValueError, AttributeError):
        return []
    names = names if isinstance(names, list) else []
    valid = [n for n in names if isinstance(n, str) and n and "/" not in n and not n.startswith(".")]
    return [runs / n for n in valid if not (runs / n).is_symlink() and is_usable(runs / n)]


def recorded_default(runs: Path) -> Path | None:
    """The Translate page's default model when the Train page made one; None: the shipped model is the default."""
    found = recorded_defaults(runs)
    return found[-1] if found else None


def direction_default(runs: Path, pair: tuple[str, str], shipped: Path | None) -> Path | None:
    """A direction's default model: the run the Train page made its default, else its shipped model, else None."""
    mine = [run for run in recorded_defaults(runs) if languages(run).pair == pair]
    if mine:
        return mine[-1]
    return shipped if shipped is not None and is_model_dir(shipped) and languages(shipped).pair == pair else None


def record_default(runs: Path, run_dir: Path) -> None:
    """Make ``run_dir`` the default of its direction (forgetting the one it replaces) and the Translate page's."""
    pair = languages(run_dir).pair
    kept = [run.name for run in recorded_defaults(runs) if languages(run).pair != pair and run != run_dir]
    (runs / DEFAULT_CHOICE_FILE).write_text(json.dumps({"runs": [*kept, run_dir.name]}) + "\n", encoding="utf-8")
