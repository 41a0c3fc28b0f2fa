"""The training command under torchrun with 2 CPU processes (gloo): it learns, and both ranks end bitwise equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from model.translate import Translator
from tests.conftest import toy_pairs, write_tsv

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_two_gloo_processes_learn_and_hold_identical_weights(tmp_path: Path) -> None:
    corpus = write_tsv(tmp_path / "toy.tsv", toy_pairs(400, seed=5))
    out = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        "-m", "training.train", "--config", "configs/tiny.toml", "--corpus", str(corpus), "--out", str(out),
        "--run.device=cpu", "--optim.max_steps=60", "--run.eval_every=30", "--run.log_every=10",
    ]  # fmt: skip
    result = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True,
                            text=True, timeout=300)
    log = result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "2 process(es)" in log
    # Each rank hashes its own weights at the end; rank 0 and rank 1 both report agreement.
    assert "rank 0 of 2" in log and "rank 1 of 2" in log
    assert log.count("ranks identical: True") == 2 and "ranks identical: False" not in log

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    keys = [(r["kind"], r["step"]) for r in records]
    assert len(keys) == len(set(keys)), "only rank 0 writes the log"
    train = [r["loss"] for r in records if r["kind"] == "train"]
    dev = [r["dev_loss"] for r in records if r["kind"] == "eval"]
    assert len(train) == 6 and train[-1] < 0.8 * train[0]
    assert len(dev) == 2 and dev[-1] < dev[0]
    assert not list(out.glob("*.tmp")) and (out / "train_state.pt").is_file()
    assert Translator.load(out).translate("El gato rojo 3.").text
