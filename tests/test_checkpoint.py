"""Exact resume: SIGKILL a training run mid-epoch, --resume it, and reach bitwise the weights of an unbroken run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from data.batch import batch_indices, encode_pairs
from data.readers import Pair
from data.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
# Dropout on, so the result depends on restoring the RNG; saves every 7 steps (not at evaluations, every 20),
# small batches so that a saved state falls mid-epoch.
ARGS = [
    "--config",
    "configs/tiny.toml",
    "--run.device=cpu",
    "--model.dropout=0.1",
    "--optim.max_steps=60",
    "--optim.max_tokens=160",
    "--run.eval_every=20",
    "--run.save_every=7",
    "--run.log_every=5",
    "--run.dev_bleu_sentences=5",
    "--run.average_last=2",
]


def command(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "training.train", "--corpus", str(corpus), "--out", str(out), *ARGS, *extra]


def run_to_end(cmd: list[str], log: Path) -> None:
    with open(log, "w") as f:
        result = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), stderr=f, timeout=300)
    assert result.returncode == 0, log.read_text()[-3000:]


def logged_steps(metrics: Path) -> list[int]:
    steps = []
    for line in metrics.read_text().splitlines() if metrics.is_file() else []:
        with contextlib.suppress(json.JSONDecodeError, KeyError):  # a line still being written
            steps.append(json.loads(line)["step"])
    return steps


def kill_after_a_save(cmd: list[str], out: Path, log: Path) -> None:
    """Start training and SIGKILL it once a state is saved and a few more steps were logged after it."""
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), stderr=f)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if (out / "train_state.pt").exists() and max(logged_steps(out / "metrics.jsonl"), default=0) >= 10:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, f"training ended (rc {proc.returncode}) before it could be killed"


def batches_per_epoch(run_dir: Path) -> int:
    """Training batches in one epoch of the run (as the trainer makes them: max_tokens 160, max_len 64)."""
    tokenizer = Tokenizer.load(run_dir)
    rows = [line.split("\t") for line in (run_dir / "splits" / "train.tsv").read_text().splitlines()]
    examples = encode_pairs([Pair(src, tgt) for src, tgt in rows], tokenizer, 64)
    return len(batch_indices(examples, 160, seed=1, epoch=0))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_sigkill_then_resume_reaches_the_same_weights(tmp_path: Path, toy_corpus: Path) -> None:
    reference, broken = tmp_path / "reference", tmp_path / "broken"
    run_to_end(command(toy_corpus, reference), tmp_path / "reference.log")

    kill_after_a_save(command(toy_corpus, broken), broken, tmp_path / "killed.log")
    saved = torch.load(broken / "train_state.pt", weights_only=True)["progress"]
    assert 0 < saved["step"] < 60
    assert 0 < saved["batch_in_epoch"] < batches_per_epoch(broken), "the saved state should fall mid-epoch"
    run_to_end(command(toy_corpus, broken, "--resume"), tmp_path / "resumed.log")
    assert "resumed at step" in (tmp_path / "resumed.log").read_text()

    # Same data, same tokenizer: otherwise equal weights could not be expected.
    assert (reference / "spm.model").read_bytes() == (broken / "spm.model").read_bytes()
    assert (reference / "splits" / "train.tsv").read_text() == (broken / "splits" / "train.tsv").read_text()

    expected, got = load_file(str(reference / "model.safetensors")), load_file(str(broken / "model.safetensors"))
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(expected[name], got[name]), name

    a = torch.load(reference / "train_state.pt", weights_only=True)
    b = torch.load(broken / "train_state.pt", weights_only=True)
    assert a["progress"]["step"] == b["progress"]["step"] == 60
    clock = {"elapsed", "warmup_elapsed"}  # wall-clock seconds differ between runs; everything else may not
    assert {k: v for k, v in a["progress"].items() if k not in clock} == {
        k: v for k, v in b["progress"].items() if k not in clock
    }
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    for index, moments in a["optimizer"]["state"].items():
        for key, value in moments.items():
            assert torch.equal(value, b["optimizer"]["state"][index][key]), (index, key)

    # The resumed log holds every record once, as the unbroken run's does; evaluations agree exactly.
    ref_log, new_log = read_jsonl(reference / "metrics.jsonl"), read_jsonl(broken / "metrics.jsonl")
    keys = [(r["kind"], r["step"]) for r in new_log]
    assert len(keys) == len(set(keys))
    assert keys == [(r["kind"], r["step"]) for r in ref_log]
    evals = [(r["step"], r["dev_loss"], r["dev_bleu"]) for r in ref_log if r["kind"] == "eval"]
    assert evals == [(r["step"], r["dev_loss"], r["dev_bleu"]) for r in new_log if r["kind"] == "eval"]
    assert [p.name for p in sorted((broken / "checkpoints").iterdir())] == [
        p.name for p in sorted((reference / "checkpoints").iterdir())
    ]
