"""The estimate before Start (jobs/estimate.py, training/calibrate.py) and the verdict on a run's curves
(jobs/run_verdict.py): pure functions on made-up figures, bad figures refused, and one real calibration."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from jobs import control
from jobs.control import fine_tune_overrides
from jobs.estimate import (
    CALIBRATION_DIR,
    CALIBRATION_VERSION,
    DEV_FLOOR,
    MIN_EVALS,
    Calibration,
    EstimateError,
    calibrate,
    dev_floor,
    dev_override,
    estimate,
    split_sizes,
    stored_calibration,
)
from jobs.run_verdict import verdict
from model.config import ModelConfig
from training.calibrate import prepared

TINY = control.CONFIGS_DIR / "tiny.toml"
FIGURES = {
    "version": CALIBRATION_VERSION,
    "device": "cpu",
    "sample_pairs": 200,
    "dev_pairs": 20,
    "test_pairs": 20,
    "train_pairs": 160,
    "steps_per_epoch": 10,
    "pieces_per_pair": 50.0,
    "seconds_per_step": 0.1,
    "dev_loss_seconds_per_pair": 0.001,
    "translate_seconds_per_sentence": 0.01,
    "setup_seconds": 1.0,
    "startup_seconds": 2.0,
    "peak_memory_mb": 300.0,
    "measured_at": 1000.0,
}


def config(*overrides: str):
    return control.read_preset(TINY, list(overrides))


def cal(**changes: object) -> Calibration:
    return Calibration.from_json({**FIGURES, **changes}, "test")


def test_the_first_limit_reached_decides_the_steps() -> None:
    c = cal()
    by_epochs = estimate(200, config("optim.max_epochs=3", "optim.max_steps=1000"), c, 0.0)
    assert by_epochs.steps == 30 and by_epochs.epochs == 3 and by_epochs.limit == "3 epochs"
    by_steps = estimate(200, config("optim.max_epochs=100", "optim.max_steps=25"), c, 0.0)
    assert by_steps.steps == 25 and by_steps.limit == "25 steps"
    by_minutes = estimate(
        200, config("optim.max_epochs=1000", "optim.max_steps=10000000", "optim.max_minutes=1"), c, 0.0
    )
    assert by_minutes.limit == "1 minute" and by_minutes.train_seconds <= 60 + 1
    assert by_minutes.steps < 60 / c.seconds_per_step  # evaluations take part of the minute


def test_the_estimate_scales_with_the_corpus_and_the_budget() -> None:
    c, settings = cal(), config("optim.max_epochs=2", "optim.max_steps=100000")
    small, large = estimate(200, settings, c, 50.0), estimate(20_000, settings, c, 50.0)
    assert large.steps_per_epoch > 50 * small.steps_per_epoch
    assert large.total_seconds > small.total_seconds
    assert small.finish_at == pytest.approx(50.0 + small.total_seconds)
    assert small.tokens == round(small.train_pairs * c.pieces_per_pair)
    longer = estimate(200, config("optim.max_epochs=4", "optim.max_steps=100000"), c, 50.0)
    assert longer.steps == 2 * small.steps and longer.train_seconds > small.train_seconds


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 99}, "version"),
        ({"seconds_per_step": None}, "seconds_per_step is missing"),
        ({"seconds_per_step": "fast"}, "seconds_per_step is missing or not a number"),
        ({"seconds_per_step": math.nan}, "not a finite number"),
        ({"peak_memory_mb": -1.0}, "not a finite number"),
        ({"steps_per_epoch": 0}, "no training batches"),
        ({"device": 3}, "device is missing or not a text"),
        ({"train_pairs": True}, "train_pairs"),
    ],
)
def test_bad_calibration_figures_are_refused_by_name(changes: dict, message: str) -> None:
    with pytest.raises(EstimateError, match=message):
        cal(**changes)


def test_a_stored_calibration_is_used_until_stale_or_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / CALIBRATION_DIR
    folder.mkdir()
    (folder / "k.json").write_text(json.dumps(FIGURES))
    assert stored_calibration(tmp_path, "k", now=1000.0 + 60) == cal()
    assert stored_calibration(tmp_path, "k", now=1000.0 + 3 * 24 * 3600) is None  # stale: measure again
    assert stored_calibration(tmp_path, "missing", now=1000.0) is None
    for bad in ("{not json", json.dumps([1, 2]), json.dumps({**FIGURES, "seconds_per_step": -3})):
        (folder / "k.json").write_text(bad)
        assert stored_calibration(tmp_path, "k", now=1000.0) is None


def tsv(n: int) -> str:
    return "".join(f"El perro {i} corre rápido.\tThe dog {i} runs fast.\n" for i in range(n))


@pytest.mark.slow
def test_a_real_calibration_and_its_failures(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(tsv(120))
    measured = calibrate(tmp_path, "key", TINY, corpus)
    assert measured.seconds_per_step > 0 and measured.steps_per_epoch >= 1 and measured.peak_memory_mb > 0
    assert stored_calibration(tmp_path, "key", measured.measured_at) == measured
    (tmp_path / "bad.tsv").write_text("only one field\n" * 30)
    with pytest.raises(EstimateError, match=r"measuring failed: error: .*bad\.tsv"):
        calibrate(tmp_path, "bad", TINY, tmp_path / "bad.tsv")
    with pytest.raises(EstimateError, match=r"over 0\.01 s"):
        calibrate(tmp_path, "slow", TINY, corpus, timeout_s=0.01)


# ----------------------------------------------------------------------------------------- fine-tuning


def test_fine_tune_overrides_take_the_parents_reading_and_refuse_bad_input(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "es-en"
    overrides = fine_tune_overrides(shipped)
    assert f"run.init_from={shipped}" in overrides and "optim.lr=0.0001" in overrides
    assert "data.case_markup=true" in overrides  # the shipped model reads its source with case markup
    config(*overrides)  # a valid configuration
    with pytest.raises(control.JobError, match="not a finished model"):
        fine_tune_overrides(tmp_path)
    with pytest.raises(control.JobError, match="learning rate"):
        fine_tune_overrides(shipped, lr=0.0)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "model.safetensors"):
        (broken / name).write_text("{}")
    with pytest.raises(control.JobError, match="broken"):
        fine_tune_overrides(broken)  # no tokenizer


def test_a_calibrated_fine_tune_has_the_parents_shape(tmp_path: Path) -> None:
    """A fine-tune is timed at the model it starts from (its layers and width), not at the preset's."""
    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "es-en"
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(tsv(120))
    timed, _, _ = prepared(config(*fine_tune_overrides(shipped)), corpus)
    assert timed.model == ModelConfig.from_json_file(shipped / "config.json") != config().model


# ----------------------------------------------------------------------------------------- the verdict


def records(dev: list[float], train: list[float], bleu: list[float] | None = None) -> list[dict]:
    rows = [{"kind": "train", "step": 10 * (i + 1), "loss": loss} for i, loss in enumerate(train)]
    for i, loss in enumerate(dev):
        row = {"kind": "eval", "step": 10 * (i + 1), "dev_loss": loss}
        if bleu:
            row["dev_bleu"] = bleu[i]
        rows.append(row)
    return rows


def test_the_verdict_reads_the_curves() -> None:
    assert verdict(records([3.0], [4.0])).kind == "early"
    assert verdict([]).kind == "early"
    rising = verdict(records([3.0, 2.5, 2.0], [4, 3, 2], bleu=[1.0, 3.0, 6.0]))
    assert rising.kind == "improving" and "dev bleu still rising" in rising.text.lower()
    assert verdict(records([3.0, 2.5, 2.0], [4, 3, 2])).text.startswith("Dev loss still falling")
    over = verdict(records([3.0, 2.0, 2.2, 2.6], [4, 3, 2, 1]))
    assert over.kind == "overfitting" and "over-fitting" in over.text and "step 20" in over.text
    assert verdict(records([3.0, 2.0, 2.2, 2.6], [4, 3, 3.5, 4])).kind == "worse"
    assert verdict(records([2.0, 2.001, 2.0005, 2.0002], [3, 2.9, 2.9, 2.9])).kind == "flat"


def test_the_verdict_skips_malformed_records() -> None:
    rows = records([3.0, 2.5, 2.0], [4, 3, 2]) + [
        {"kind": "eval", "step": 40, "dev_loss": "nan?"},
        {"kind": "eval", "dev_loss": 1.0},
        {"step": 50},
    ]
    assert verdict(rows).kind == "improving"
    with_replayed = records([3.0, 2.5], [4, 3]) + [{"kind": "eval", "step": 20, "dev_loss": 3.5}]  # after a resume
    assert verdict(with_replayed).kind in ("worse", "overfitting")


def test_the_estimate_record_round_trips() -> None:
    made = estimate(200, config(), cal(), 0.0)
    assert json.loads(json.dumps(dataclasses.asdict(made)))["steps"] == made.steps


@pytest.mark.parametrize("pairs", [30, 400, 2_000, 4_000, 10_000, 1_000_000])
def test_the_dev_set_is_floored_at_200_or_five_percent(pairs: int) -> None:
    floor = dev_floor(pairs)
    assert floor == min(DEV_FLOOR, max(1, pairs // 20))
    dev, _ = split_sizes(pairs, config(*dev_override(pairs, config())))  # tiny asks for 20
    assert dev >= floor
    assert dev_override(pairs, config("data.dev_size=5000")) == []  # a preset asking for more keeps it


@pytest.mark.parametrize(
    "limits",
    [
        ("optim.max_steps=30",),
        ("optim.max_steps=100000", "optim.max_epochs=2"),
        ("optim.max_steps=10000000", "optim.max_epochs=1000", "optim.max_minutes=0.2"),
        ("optim.max_steps=10000000", "optim.max_epochs=1000", "optim.max_minutes=30"),
    ],
)
def test_every_estimated_run_gets_the_evaluations_its_verdict_needs(limits: tuple[str, ...]) -> None:
    settings = config("run.eval_every=1000", *limits)
    made = estimate(2_000, settings, cal(), 0.0)
    assert made.steps // made.eval_every >= MIN_EVALS and made.evaluations >= MIN_EVALS
    enough = estimate(2_000, config("run.eval_every=5", *limits), cal(), 0.0)
    assert enough.eval_every == 5  # the preset's spacing when it already fits
