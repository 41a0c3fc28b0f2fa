"""A hostile-input table through every command that takes a path: a path that is missing, a file where a folder is
expected (or a folder where a file is), a FIFO, a model folder that lies and someone's project folder; and every
output a command does not own (someone's project, a link to itself, a FIFO). Each is one line on stderr starting
"error: ", status 2, in bounded time, and nothing is written anywhere."""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
from pathlib import Path

import pytest

from training.__main__ import main as training_main
from translate.cli import main as translate_main
from workshop.__main__ import main as workshop_main

# name: (the command's main, its arguments with {model} or {file} where the hostile path goes)
MODEL_COMMANDS: dict[str, tuple[str, list[str]]] = {
    "translate": ("translate", ["--model", "{model}", "Hola"]),
    "training evaluate": ("evaluate", ["--model", "{model}", "--pairs", "{pairs}"]),
    "training export": ("export", ["--run", "{model}", "--out", "{out}"]),
    "training guard": ("guard", ["--model", "{model}"]),
    "training train --init-from": (
        "train",
        ["--config", "configs/tiny.toml", "--corpus", "{pairs}", "--init-from", "{model}", "--out", "{out}"],
    ),
    "workshop gate": ("gate", ["--candidate", "{model}", "--baseline", "{good}"]),
    "workshop gate --baseline": ("gate", ["--candidate", "{good}", "--baseline", "{model}"]),
    "workshop phrases": ("phrases", ["--model", "{model}"]),
    "workshop copy-check": ("copy-check", ["--model", "{model}"]),
    "workshop behaviour": ("behaviour", ["--model", "{model}"]),
    "workshop distill": ("distill", ["--teacher", "{model}", "--pairs", "{pairs}", "--out", "{out}"]),
    "workshop average": ("average", ["--model", "{model}", "--model", "{good}", "--out", "{out}"]),
    "workshop deepen": (
        "deepen",
        ["--model", "{model}", "--encoder-layers", "4", "--decoder-layers", "3", "--out", "{out}"],
    ),
    "workshop neighbours-index": ("neighbours-index", ["--model", "{model}"]),
    "workshop ct2-export": ("ct2-export", ["--model", "{model}", "--out", "{out}"]),
}
FILE_COMMANDS: dict[str, tuple[str, list[str]]] = {
    "training train --corpus": ("train", ["--config", "configs/tiny.toml", "--corpus", "{file}", "--out", "{out}"]),
    "training train --config": ("train", ["--config", "{file}", "--corpus", "{pairs}", "--out", "{out}"]),
    "training evaluate --pairs": ("evaluate", ["--model", "{good}", "--pairs", "{file}"]),
    "workshop distill --pairs": ("distill", ["--teacher", "{good}", "--pairs", "{file}", "--out", "{out}"]),
    "workshop phrases --phrases": ("phrases", ["--model", "{good}", "--phrases", "{file}"]),
    "workshop recipe --recipe": ("recipe", ["--recipe", "{file}", "--out", "{out}"]),
    "workshop student --distilled": (
        "student",
        ["--distilled", "{file}", "--config", "configs/tiny.toml", "--corpus", "{pairs}", "--out", "{out}"],
    ),
    "workshop learning-curve --corpus": (
        "learning-curve",
        ["--corpus", "{file}", "--work", "{out}", "--out", "{json}", "--curve", "scratch:10:2:1"],
    ),
    "workshop learning-curve --check": ("learning-curve", ["--check", "{file}"]),
}
# Outputs: {dest} is someone's project folder, a link to itself or a FIFO; never written into, over or through.
OUT_COMMANDS: dict[str, tuple[str, list[str]]] = {
    "training train --out": ("train", ["--config", "configs/tiny.toml", "--corpus", "{pairs}", "--out", "{dest}"]),
    "training train --resume": ("train", ["--out", "{dest}", "--resume"]),
    "training export --out": ("export", ["--run", "{good}", "--out", "{dest}"]),
    "training evaluate --json": ("evaluate", ["--model", "{good}", "--pairs", "{pairs}", "--json", "{dest}"]),
    "training evaluate --hyp": ("evaluate", ["--model", "{good}", "--pairs", "{pairs}", "--hyp", "{dest}"]),
    "workshop gate --json": ("gate", ["--candidate", "{good}", "--json", "{dest}"]),
    "workshop distill --out": ("distill", ["--teacher", "{good}", "--pairs", "{pairs}", "--out", "{dest}"]),
    "workshop average --out": ("average", ["--model", "{good}", "--model", "{good}", "--out", "{dest}"]),
    "workshop deepen --out": (
        "deepen",
        ["--model", "{good}", "--encoder-layers", "4", "--decoder-layers", "3", "--out", "{dest}"],
    ),
    "workshop ct2-export --out": ("ct2-export", ["--model", "{good}", "--out", "{dest}"]),
    "workshop learning-curve --out": (
        "learning-curve",
        ["--corpus", "{pairs}", "--work", "{out}", "--out", "{dest}", "--curve", "scratch:10:2:1"],
    ),
}
LAB = {"translate", "evaluate", "export", "guard", "train"}


def hostile_models(root: Path) -> dict[str, Path]:
    lying = root / "lying"
    lying.mkdir(parents=True)
    (lying / "config.json").write_text('{"d_model": ')
    (lying / "model.safetensors").write_bytes(b"\xff" * 64)
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "config.json").write_text(json.dumps({"name": "my-web-project"}))
    (project / "src" / "main.py").write_text("print('hello')\n")
    os.mkfifo(root / "fifo")
    (root / "loop").symlink_to(root / "loop")
    (root / "notes.txt").write_text("not a model\n")
    return {
        "missing": root / "nope",
        "a file": root / "notes.txt",
        "a FIFO": root / "fifo",
        "a link to itself": root / "loop",
        "lying": lying,
        "project": project,
    }


def hostile_outputs(root: Path) -> dict[str, Path]:
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "config.json").write_text(json.dumps({"name": "my-web-project"}))
    (project / "notes.txt").write_text("my notes\n")
    (project / "src" / "main.py").write_text("print('hello')\n")
    (root / "loop").symlink_to(root / "loop")
    os.mkfifo(root / "fifo")
    return {"someone's project": project, "a link to itself": root / "loop", "a FIFO": root / "fifo"}


def hostile_files(root: Path) -> dict[str, Path]:
    (root / "folder").mkdir(parents=True)
    os.mkfifo(root / "fifo")
    return {"missing": root / "nope.tsv", "a folder": root / "folder", "a FIFO": root / "fifo"}


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if not p.is_fifo() and not p.is_symlink()
    } | {str(p.relative_to(folder)): os.readlink(p) for p in folder.rglob("*") if p.is_symlink()}


def run(name: str, argv: list[str], seconds: float = 60.0) -> tuple[int, str]:
    """The command's status and stderr, in this process; a hang within ``seconds`` fails."""
    door = {"translate": translate_main, **dict.fromkeys(LAB - {"translate"}, training_main)}.get(name, workshop_main)
    main = (lambda a: door(a)) if name == "translate" else (lambda a: door([name, *a]))
    err = io.StringIO()
    found: list[int] = []

    def call() -> None:
        with contextlib.redirect_stderr(err):
            try:
                found.append(main(argv))
            except SystemExit as exit_:
                found.append(int(exit_.code or 0))

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(seconds)
    assert found, f"no answer within {seconds} s: {argv}"
    return found[0], err.getvalue()


def one_refusal(status: int, err: str, argv: list[str]) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) <= 400, (
        argv,
        status,
        err[-800:],
    )


def refuses_every_one(
    command: tuple[str, list[str]], slot: str, hostile: dict[str, Path], good: Path, tmp: Path
) -> None:
    """Each ``hostile`` path in ``slot`` of the command's arguments: one line, status 2, nothing written under
    ``tmp``."""
    main, template = command
    before = snapshot(tmp)
    for kind, path in hostile.items():
        fill = {
            slot: str(path),
            "{pairs}": str(good / "splits" / "test.tsv"),
            "{good}": str(good),
            "{out}": str(tmp / "out"),
            "{json}": str(tmp / "out.json"),
        }
        argv = [fill.get(a, a) for a in template]
        status, err = run(main, argv)
        one_refusal(status, err, [kind, *argv])
        assert snapshot(tmp) == before, (kind, argv)


@pytest.mark.parametrize("name", list(MODEL_COMMANDS))
def test_every_command_refuses_a_hostile_model_folder_in_one_line(
    name: str, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    models = hostile_models(tmp_path / "in")
    refuses_every_one(MODEL_COMMANDS[name], "{model}", models, tiny_model_dir, tmp_path)


@pytest.mark.parametrize("name", list(FILE_COMMANDS))
def test_every_command_refuses_a_hostile_file_in_one_line(
    name: str, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    files = hostile_files(tmp_path / "in")
    refuses_every_one(FILE_COMMANDS[name], "{file}", files, tiny_model_dir, tmp_path)


@pytest.mark.parametrize("name", list(OUT_COMMANDS))
def test_every_command_refuses_an_output_it_does_not_own_in_one_line(
    name: str, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    outputs = hostile_outputs(tmp_path / "in")
    refuses_every_one(OUT_COMMANDS[name], "{dest}", outputs, tiny_model_dir, tmp_path)
