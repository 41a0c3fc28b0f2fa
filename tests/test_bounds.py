"""Every setting is bounded where it is read, on the command line, in a TOML preset and in the Train page's overrides
alike: a value out of range is one line naming the setting and its range, exit status 2, before any work (the run
folder is never made, the model never looked for)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import toy_pairs, write_tsv

from jobs import control
from training.evaluate import main as evaluate_main
from training.train import main as train_main
from translate.cli import MAX_BEAM
from translate.cli import main as translate_main
from translate.model_dir import machine_devices
from translate.settings import MAX_THREADS
from workshop.__main__ import main as workshop_main

MISSING = "/nonexistent/model"  # a model no command may reach: the bound is checked first
HAS = f"not one this machine has (expected {', '.join(machine_devices())})"
SEEDS = "must be 0 … 18446744073709551615 (what torch.manual_seed takes), got"
TRAIN = ["--config", "configs/tiny.toml", "--corpus", "{corpus}", "--out", "{out}"]

THREADS = f"{MAX_THREADS} (twice this machine's cores)"
TRAIN_CASES = {  # an override of ``training train``: what its one line says
    "--run.threads=4096": f"run.threads must be 0 (torch's default) or 1 … {THREADS}, got 4096",
    "--run.threads=-1": "run.threads must be at least 0, got -1",
    "--optim.seed=99999999999999999999999": f"optim.seed {SEEDS} 99999999999999999999999",
    "--optim.seed=-1": f"optim.seed {SEEDS} -1",
    "--data.split_seed=-5": f"data.split_seed {SEEDS} -5",
    "--run.device=meta": f"run.device 'meta': {HAS}",
    "--run.device=xla": f"run.device 'xla': {HAS}",  # was NotImplementedError
    "--run.device=tpu": f"run.device 'tpu': {HAS}",  # was torch's traceback
    "--optim.lr=-1": "optim.lr must be at least 0",
    "--data.vocab_size=-1": "data.vocab_size must be from 5 to 1,000,000, got -1",  # was SentencePiece's traceback
}
WORKSHOP_CASES = {  # a workshop command, its model MISSING: what its one line says
    "bench requests --threads 0": f"--threads 0: expected 1 to {THREADS}",
    "bench requests --repeats 0": "--repeats 0: expected 1 to 100 timed calls",
    "bench requests --sessions -3": "--sessions -3: expected 0 to 32 browser sessions",
    "bench requests --seconds -5": "--seconds -5.0: expected 1 to 3,600 seconds",
    "bench requests --seconds nan": "--seconds nan: expected 1 to 3,600 seconds",
    "bench quality --beams 0,-1": f"--beams 0: expected 1 to {MAX_BEAM} (1 = greedy)",
    "bench quality --beams 4,x": f"--beams '4,x': expected beam sizes separated by commas, each 1 to {MAX_BEAM}",
    "bench quality --threads 4096": f"--threads 4096: expected 0 to {THREADS}",
    "bench model_speed --steps 0": "--steps 0: expected 1 to 10,000",
    "bench app_latency --rounds 0": "--rounds 0: expected 1 to 100 timed clicks",
    "bench uncertainty --wrong-below -1": "--wrong-below -1.0: expected 0 to 100 chrF",
    "neighbours-index --check 999999999": "--check 999999999: expected 1 to 10,000 training pairs",
    "neighbours-index --check -5": "--check -5: expected 1 to 10,000 training pairs",
    "behaviour --threads 0": f"--threads 0: expected 1 to {THREADS}",
}
# (the command's main, its arguments, what its one line says)
CASES: list[tuple[Callable[[list[str]], int | None], list[str], str]] = [
    *((train_main, [*TRAIN, override], says) for override, says in TRAIN_CASES.items()),
    (translate_main, ["--model", MISSING, "--device", "meta", "Hola"], f"device 'meta': {HAS}"),
    (evaluate_main, ["--model", MISSING, "--pairs", "{corpus}", "--device", "meta"], f"device 'meta': {HAS}"),
    *((workshop_main, [*c.split()[:-2], "--model", MISSING, *c.split()[-2:]], s) for c, s in WORKSHOP_CASES.items()),
]


@pytest.mark.parametrize(
    ("main", "argv", "says"), CASES, ids=[a[-1] if a[-1].startswith("--") else " ".join(a[-2:]) for _, a, _ in CASES]
)
def test_a_setting_out_of_range_is_one_line_before_any_work(
    main: Callable[[list[str]], int | None], argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus, out = write_tsv(tmp_path / "toy.tsv", toy_pairs(30)), tmp_path / "run"
    try:
        status = main([a.format(corpus=corpus, out=out) for a in argv])
    except SystemExit as exit_:
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and err.startswith("error: ") and says in err, err
    assert not out.exists()  # no half-made run folder (the seed was refused after the data's preparation)


def test_a_preset_and_the_pages_overrides_are_bounded_alike(tmp_path: Path) -> None:
    preset = tmp_path / "seeded.toml"
    preset.write_text("[optim]\nseed = 99999999999999999999999\n")
    with pytest.raises(control.JobError, match=re.escape(f"optim.seed {SEEDS} 99999999999999999999999")):
        control.read_preset(preset)
    with pytest.raises(control.JobError, match=re.escape(f"optim.seed {SEEDS} -1")):
        control.read_preset(Path("configs/tiny.toml"), ["optim.seed=-1"])
