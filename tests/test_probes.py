"""Attention being learned: the probe sentences' maps a run records at each dev evaluation (training/probes.py),
read back (jobs/run_progress.py) and shown with a step slider on the Train page (views/train_run.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from data.batch import encode_pairs
from data.corpus import read_pairs_file
from jobs.run_progress import probe_labels, probe_map, probe_steps
from model.run_dir import split_file
from training import probes
from translate.settings import RUNS_ENV
from translate.translator import Translator

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "1_Train.py")


def test_the_probes_at_two_steps_differ_and_are_attention(tiny_model_dir: Path) -> None:
    steps = probe_steps(tiny_model_dir)
    assert steps == [150, 300]  # one per dev evaluation (run.eval_every=150, optim.max_steps=300)
    labels = probe_labels(tiny_model_dir)
    assert 1 <= len(labels) <= probes.PROBE_SENTENCES
    for sentence, row in enumerate(labels):
        assert len(row["src"]) <= probes.MAX_PROBE_TOKENS and len(row["tgt_out"]) <= probes.MAX_PROBE_TOKENS
        early, late = (probe_map(tiny_model_dir, step, sentence, "cross") for step in steps)
        assert early.shape == late.shape and early.shape[2:] == (len(row["tgt_out"]), len(row["src"]))
        assert np.allclose(early.sum(-1), 1, atol=1e-2) and np.allclose(late.sum(-1), 1, atol=1e-2)
        assert not np.allclose(early, late, atol=1e-3)  # the model learned between the two evaluations
        encoder = probe_map(tiny_model_dir, steps[-1], sentence, "encoder")
        assert encoder.shape[2:] == (len(row["src"]), len(row["src"]))


def test_recording_is_bounded(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    translator = Translator.load(tiny_model_dir)
    dev = encode_pairs(read_pairs_file(split_file(tiny_model_dir, "dev")), translator.tokenizer, 64)
    long = [e for e in dev if len(e.src) > 3][:1]
    monkeypatch.setattr(probes, "MAX_PROBE_TOKENS", 3)
    assert all(e not in probes.probe_examples(dev) for e in long)  # too long to be a probe
    monkeypatch.setattr(probes, "MAX_PROBE_STEPS", 2)
    chosen = probes.probe_examples(dev)
    translator.model.train()
    for step in (1, 2, 3):
        probes.record_probes(translator.model, translator.tokenizer, chosen, tmp_path, step)
    assert probe_steps(tmp_path) == ([1, 2] if chosen else [])
    assert translator.model.training  # put back in training mode


def test_unreadable_probes_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / probes.PROBES_DIR
    folder.mkdir()
    (folder / "step-00000010.npz").write_bytes(b"not an npz")
    (folder / "step-x.npz").write_bytes(b"")
    (folder / probes.PROBE_TOKENS_FILE).write_text("{broken")
    assert probe_steps(tmp_path) == [10] and probe_labels(tmp_path) == []
    assert probe_map(tmp_path, 10, 0, "cross") is None and probe_map(tmp_path, 10, 0, "nonsense") is None
    (folder / probes.PROBE_TOKENS_FILE).write_text(json.dumps([{"src": "not a list"}]))
    assert probe_labels(tmp_path) == []
    np.savez(folder / "step-00000020.npz", cross_0=np.ones((2, 2), dtype=np.float16))  # not (L, H, rows, cols)
    assert probe_map(tmp_path, 20, 0, "cross") is None and probe_map(tmp_path, 20, 5, "cross") is None


def chart_data(at: AppTest) -> str:
    return next(
        c.proto.spec for c in at.get("vega_lite_chart") if "probe" in c.proto.spec or "attends to" in c.proto.spec
    )


def test_the_page_shows_the_probes_at_each_step(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(tiny_model_dir, runs / "tiny")
    monkeypatch.setenv(RUNS_ENV, str(runs))
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.session_state["owner_token"] = "tab"
    at.run()
    assert not at.exception
    at.toggle(key="probes_on").set_value(True).run()
    assert not at.exception
    assert at.select_slider(key="probe_step").value == 300
    late = chart_data(at)
    at.select_slider(key="probe_step").set_value(150).run()
    early = chart_data(at)
    assert "step 150" in early and "step 300" in late and early != late
    at.radio(key="probe_kind").set_value("encoder").run()
    assert not at.exception and "encoder self-attention" in chart_data(at)
    (runs / "tiny" / probes.PROBES_DIR / "step-00000150.npz").write_bytes(b"broken")
    at.select_slider(key="probe_step").set_value(150).run()
    assert not at.exception and any("cannot be read" in c.value for c in at.caption)


def test_the_probe_chart_is_a_bounded_heatmap_of_the_labelled_cells() -> None:
    from viz.training_charts import probe_chart, probe_frame

    weights = [[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]]
    frame = probe_frame(weights, ["a", "a"], ["x", "y"])  # a third column without a label is left out
    assert len(frame) == 4 and frame["row"].tolist()[:2] == ["1. a", "1. a"] and "2. a" in set(frame["row"])
    spec = probe_chart(weights, ["a", "b"], ["x", "y", "z"], "cross").to_dict()
    assert spec["mark"]["type"] == "rect" and spec["encoding"]["color"]["scale"]["domain"] == [0, 1]
