"""The training command under torchrun with 2 CPU processes (gloo): it learns, ranks agree, resume is exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from model.run_dir import train_links_file
from translate.translator import Translator

ROOT = Path(__file__).resolve().parent.parent
ARGS = [
    "--config",
    "configs/tiny.toml",
    "--run.device=cpu",
    "--model.dropout=0.1",
    "--run.eval_every=30",
    "--run.log_every=10",
    "--run.dev_bleu_sentences=10",
]


def torchrun(*args: str) -> str:
    """Run ``python -m training.train ARGS`` in 2 processes; returns the log (stderr)."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "training.train",
        *args,
    ]
    result = subprocess.run(
        cmd, cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


@pytest.fixture(scope="module")
def ddp_run(toy_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("ddp") / "run"
    return out, torchrun("--corpus", str(toy_corpus), "--out", str(out), *ARGS, "--optim.max_steps=60")


@pytest.mark.slow
def test_two_gloo_processes_learn_and_hold_identical_weights(ddp_run: tuple[Path, str]) -> None:
    out, log = ddp_run
    assert "2 process(es)" in log
    # Each rank hashes its own weights at the end; both report that all digests agree.
    assert "rank 0 of 2" in log and "rank 1 of 2" in log
    assert log.count("ranks identical: True") == 2 and "ranks identical: False" not in log

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    keys = [(r["kind"], r["step"]) for r in records]
    assert len(keys) == len(set(keys)), "only rank 0 writes the log"
    train = [r["loss"] for r in records if r["kind"] == "train"]
    dev = [r["dev_loss"] for r in records if r["kind"] == "eval"]
    assert [r["step"] for r in records if r["kind"] == "train"] == [1, 2, 4, 8, 10, 20, 30, 40, 50, 60]
    assert train[-1] < 0.8 * train[0]
    assert len(dev) == 2 and dev[-1] < dev[0]
    assert not list(out.glob("*.tmp")) and (out / "train_state.pt").is_file()
    assert Translator.load(out).translate("El gato rojo 3.").text


@pytest.mark.slow
def test_resume_under_torchrun_is_exact(ddp_run: tuple[Path, str], toy_corpus: Path) -> None:
    """Stop at step 30, resume to 60: equal to the unbroken run only if each process gets its own RNG back."""
    out, _ = ddp_run
    split = out.parent / "split"
    torchrun("--corpus", str(toy_corpus), "--out", str(split), *ARGS, "--optim.max_steps=30")
    log = torchrun("--out", str(split), "--resume", "--optim.max_steps=60")
    assert log.count("resumed at step 30") == 2
    a = torch.load(out / "train_state.pt", weights_only=True)
    b = torch.load(split / "train_state.pt", weights_only=True)
    assert a["progress"]["step"] == b["progress"]["step"] == 60 and len(b["rng"]) == 2
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name


@pytest.mark.slow
def test_guided_alignment_under_torchrun_reads_one_links_file_and_ranks_agree(toy_corpus: Path, tmp_path: Path) -> None:
    """Rank 0 writes eflomal's links once; each rank reads the rows of its own batches, the head learns them
    (eflomal is not seeded: aggregates only) and the ranks end with the same weights."""
    pytest.importorskip("eflomal")
    out = tmp_path / "guided"
    guided = ["--optim.guided_alignment.weight=1", "--optim.guided_alignment.layer=0"]
    log = torchrun("--corpus", str(toy_corpus), "--out", str(out), *ARGS, *guided, "--optim.max_steps=30")
    assert log.count("ranks identical: True") == 2 and "ranks identical: False" not in log
    assert log.count("guided alignment: weight 1") >= 1
    train_pairs = (out / "splits" / "train.tsv").read_text().splitlines()
    assert len(train_links_file(out).read_text().splitlines()) == len(train_pairs)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    align = [r["align_loss"] for r in records if r["kind"] == "train"]
    assert len(align) == 7 and all(a >= 0 for a in align) and align[-1] < 0.85 * align[0]  # steps 1, 2, 4, 8, 10…
