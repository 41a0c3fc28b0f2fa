"""A command writes only into what it owns (training/outputs.py), and every command line that translates checks
its decoding options in one place (translate/cli.py): each refusal is one line on stderr, status 2, before the
work starts, and leaves what was there byte for byte."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from test_every_command import run

from model.run_dir import CONFIG_FILE, NAME_GUARD_FILE, WEIGHTS_FILE
from training.evaluate import main as evaluate_main
from training.export import main as export_main
from translate.cli import main as translate_main
from workshop.__main__ import main as workshop_main
from workshop.average import main as average_main
from workshop.copy_check import main as copy_check_main
from workshop.deepen import main as deepen_main
from workshop.distill import main as distill_main
from workshop.gate import main as gate_main


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def someones_project(folder: Path) -> Path:
    """A folder that is not a model directory but holds a ``config.json``."""
    (folder / "src").mkdir(parents=True)
    (folder / CONFIG_FILE).write_text(json.dumps({"name": "my-web-project"}))
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "src" / "main.py").write_text("print('hello')\n")
    return folder


def one_refusal(capsys: pytest.CaptureFixture[str], *says: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert all(s in err for s in says), err
    return err


WRITERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "export": lambda model, out: ["--run", str(model), "--out", str(out)],
    "average": lambda model, out: ["--model", str(model), "--model", str(model), "--out", str(out)],
    "deepen": lambda model, out: [
        "--model",
        str(model),
        "--encoder-layers",
        "3",
        "--decoder-layers",
        "1",
        "--out",
        str(out),
    ],
}
MAINS = {"export": export_main, "average": average_main, "deepen": deepen_main}


@pytest.mark.parametrize("command", list(WRITERS))
@pytest.mark.parametrize("folder", ["someone's project", "a model folder with notes", "a training run"])
def test_a_folder_that_is_not_a_model_directory_is_never_replaced(
    command: str, folder: str, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if folder == "someone's project":
        out, named = someones_project(tmp_path / "out"), "notes.txt, src"
    elif folder == "a model folder with notes":
        out, named = tmp_path / "out", "notes.txt"
        out.mkdir()
        for name in (CONFIG_FILE, WEIGHTS_FILE):
            shutil.copy(tiny_model_dir / name, out / name)
        (out / "notes.txt").write_text("mine\n")
    else:
        out, named = Path(shutil.copytree(tiny_model_dir, tmp_path / "out")), "metrics.jsonl"
    before = snapshot(out)
    assert MAINS[command](WRITERS[command](tiny_model_dir, out)) == 2
    one_refusal(capsys, f"--out {out}", "not a model directory", named)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staged folder left beside it


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_model_folder_this_project_wrote_is_replaced(
    command: str, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert export_main(["--run", str(tiny_model_dir), "--out", str(out)]) == 0
    (out / "MODEL_CARD.md").write_text("# the previous model\n")
    assert MAINS[command](WRITERS[command](tiny_model_dir, out)) == 0, capsys.readouterr().err
    assert (out / WEIGHTS_FILE).is_file() and not (out / "MODEL_CARD.md").exists()


def test_distill_never_appends_to_a_file_it_did_not_begin(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "other.tsv"
    out.write_text("".join(f"uno {i}\tone {i}\n" for i in range(100)), encoding="utf-8")
    before = snapshot(tmp_path)
    pairs = tiny_model_dir / "splits" / "train.tsv"
    monkeypatch.setattr("workshop.distill.distill", lambda *a: pytest.fail("distilled into a foreign file"))
    assert distill_main(["--teacher", str(tiny_model_dir), "--pairs", str(pairs), "--out", str(out)]) == 2
    one_refusal(capsys, f"--out {out}", "other.tsv.json", "not appended to")
    (tmp_path / "other.tsv.json").write_text("[1, 2]")  # a side-car that is not one
    assert distill_main(["--teacher", str(tiny_model_dir), "--pairs", str(pairs), "--out", str(out)]) == 2
    one_refusal(capsys, "other.tsv.json", "not the side-car")
    (tmp_path / "other.tsv.json").unlink()
    assert snapshot(tmp_path) == before
    (tmp_path / "new.tsv.json").write_text('{"mine": 1}')  # someone's file where a new --out's side-car would go
    before = snapshot(tmp_path)
    assert (
        distill_main(["--teacher", str(tiny_model_dir), "--pairs", str(pairs), "--out", str(tmp_path / "new.tsv")]) == 2
    )
    one_refusal(capsys, "new.tsv.json", "not the side-car")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["a link to someone's file", "a FIFO"])
def test_the_guard_is_written_whole_never_through_what_lies_at_its_name(
    kind: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    (guard := model / NAME_GUARD_FILE).unlink(missing_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's file\n")
    guard.symlink_to(victim) if kind != "a FIFO" else os.mkfifo(guard)  # was: written through, or a hang
    status, err = run("guard", ["--model", str(model)], seconds=60)
    assert status == 0, err
    assert victim.read_text() == "someone's file\n" and guard.is_file() and not guard.is_symlink()
    assert json.loads(guard.read_text())["lang"] == "es"


def hostile_outputs(tmp_path: Path) -> list[tuple[str, str]]:
    """Output paths no command can write: (path, what the refusal says)."""
    (tmp_path / "folder").mkdir(exist_ok=True)
    return [
        (str(tmp_path / "folder"), "is a folder"),
        ("/proc/x.json", "cannot write in /proc"),
        ("/dev/null", "not a regular file"),
    ]


def test_an_output_that_cannot_be_written_is_refused_before_the_work(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    never = lambda *a, **k: pytest.fail("the work began before the output was checked")  # noqa: E731
    for name in (
        "training.evaluate.score",
        "workshop.gate.run_gate",
        "workshop.distill.distill",
        "workshop.copy_check.check",
    ):
        monkeypatch.setattr(name, never)
    pairs = str(tiny_model_dir / "splits" / "test.tsv")
    for path, says in hostile_outputs(tmp_path):
        for main, argv in (
            (evaluate_main, ["--model", str(tiny_model_dir), "--pairs", pairs, "--json", path]),
            (evaluate_main, ["--model", str(tiny_model_dir), "--pairs", pairs, "--hyp", path]),
            (gate_main, ["--candidate", str(tiny_model_dir), "--baseline", str(tiny_model_dir), "--json", path]),
            (distill_main, ["--teacher", str(tiny_model_dir), "--pairs", pairs, "--out", path]),
            (copy_check_main, ["--model", str(tiny_model_dir), "--json", path]),
        ):
            assert main(argv) == 2, argv
            one_refusal(capsys, path, says)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"] and not list((tmp_path / "folder").iterdir())


def test_a_report_into_a_new_folder_is_written(tiny_model_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "new" / "report.json"
    pairs = str(tiny_model_dir / "splits" / "test.tsv")
    assert evaluate_main(["--model", str(tiny_model_dir), "--pairs", pairs, "--no-typed", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["beam_size"] == 1


BAD_OPTIONS = [
    (["--beam", "-3"], "--beam -3: expected 1 (greedy) to 64"),
    (["--beam", "0"], "--beam 0: expected 1 (greedy) to 64"),
    (["--beam", "100000"], "--beam 100000: expected 1 (greedy) to 64"),
    (["--batch-size", "0"], "--batch-size 0: expected 1 to 4096"),
    (["--batch-size", "-5"], "--batch-size -5: expected 1 to 4096"),
    (["--length-penalty", "nan"], "--length-penalty nan: expected a number from 0 to 10"),
    (["--length-penalty", "-1"], "--length-penalty -1.0: expected a number from 0 to 10"),
]


@pytest.mark.parametrize(("options", "says"), BAD_OPTIONS)
def test_bad_decoding_options_get_the_same_line_from_every_command(
    options: list[str], says: str, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = str(tiny_model_dir / "splits" / "test.tsv")
    out = tmp_path / "distilled.tsv"
    for main, argv in (
        (translate_main, ["--model", str(tiny_model_dir), "Hola"]),
        (evaluate_main, ["--model", str(tiny_model_dir), "--pairs", pairs]),
        (distill_main, ["--teacher", str(tiny_model_dir), "--pairs", pairs, "--out", str(out)]),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, *options])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err == f"error: {says}\n"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--n-best", "0"], "--n-best 0: expected 1 to the beam size (1)"),
        (["--beam", "2", "--n-best", "3"], "--n-best 3: expected 1 to the beam size (2)"),
    ],
)
def test_n_best_is_refused_not_clamped(options: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        translate_main([*options, "Hola"])
    assert exit_info.value.code == 2 and capsys.readouterr().err == f"error: {says}\n"


def test_a_device_this_machine_lacks_is_one_line_from_every_command(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = str(tiny_model_dir / "splits" / "test.tsv")
    for device in ("tpu", "cuda:7" if torch.cuda.is_available() else "cuda"):  # was torch's traceback
        for main, argv in (
            (translate_main, ["--model", str(tiny_model_dir), "--device", device, "Hola"]),
            (evaluate_main, ["--model", str(tiny_model_dir), "--pairs", pairs, "--device", device]),
            (distill_main, ["--teacher", str(tiny_model_dir), "--pairs", pairs, "--out", str(tmp_path / "d.tsv")]),
        ):
            assert main([*argv, "--device", device] if main is distill_main else argv) == 2, argv
            one_refusal(capsys, f"device '{device}': not one this machine has")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["phrases", "--beam", "-3"], "--beam -3: expected 1 (greedy) to 64"),  # was greedy, silently
        (["phrases", "--beam", "100000"], "--beam 100000: expected 1 (greedy) to 64"),  # was a 40 GB allocation
        (["copy-check", "--misses", "-1"], "--misses -1: expected 0 or more"),
        (["copy-check", "--attention", "-2"], "--attention -2: expected 0 or more items"),
        (["learning-curve", "--lanes", "0"], "--lanes 0: expected 1 or more runs at once"),  # was clamped to 1
    ],
)
def test_every_workshop_count_is_refused_not_clamped(
    argv: list[str], says: str, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = [] if argv[0] == "learning-curve" else ["--model", str(tiny_model_dir)]
    with pytest.raises(SystemExit) as exit_info:
        workshop_main([*argv, *model])
    assert exit_info.value.code == 2 and capsys.readouterr().err == f"error: {says}\n"


def test_the_gate_refuses_a_tolerance_that_is_not_a_number_of_points(capsys: pytest.CaptureFixture[str]) -> None:
    assert gate_main(["--candidate", "x", "--tolerance", "nan"]) == 2
    one_refusal(capsys, "--tolerance nan")
