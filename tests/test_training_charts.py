"""Reading a run's progress from metrics.jsonl and drawing its curves (pure functions, no training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.run_progress import Budget, final_scores, latest_records, read_budget, read_metrics, run_progress
from viz.training_charts import LOSS_SERIES, SCORE_SERIES, loss_chart, metrics_frame, score_chart


def train_record(step: int, loss: float, elapsed: float, epoch: int = 0) -> dict:
    return {
        "kind": "train",
        "step": step,
        "epoch": epoch,
        "loss": loss,
        "nll": loss - 0.1,
        "lr": 1e-3,
        "tokens_per_s": 1000.0,
        "elapsed_s": elapsed,
        "max_steps": 100,
    }


def eval_record(step: int, dev_loss: float, bleu: float) -> dict:
    return {"kind": "eval", "step": step, "dev_loss": dev_loss, "dev_ppl": 2.0, "dev_bleu": bleu, "dev_chrf": bleu + 10}


RECORDS = [
    train_record(10, 4.0, 10.0),
    train_record(20, 3.0, 20.0),
    eval_record(20, 2.5, 5.0),
    train_record(30, 2.0, 30.0),
    train_record(20, 2.9, 21.0),
]  # step 20 replayed after a resume


def write_run(run_dir: Path, records: list[dict], optim: dict, partial_line: bool = False) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in records) + ('{"kind": "train", "st' if partial_line else "")
    (run_dir / "metrics.jsonl").write_text(text)
    (run_dir / "train_config.json").write_text(json.dumps({"optim": optim}))


def test_metrics_are_read_despite_a_line_still_being_written(tmp_path: Path) -> None:
    write_run(tmp_path, RECORDS, {"max_steps": 100}, partial_line=True)
    assert read_metrics(tmp_path) == RECORDS
    assert read_metrics(tmp_path / "missing") == []


def test_a_step_replayed_after_resume_keeps_its_last_record() -> None:
    latest = latest_records(RECORDS)
    train = [r for r in latest if r["kind"] == "train"]
    assert [r["step"] for r in train] == [10, 20, 30]
    assert train[1]["loss"] == 2.9


def test_progress_follows_the_limit_that_binds_first(tmp_path: Path) -> None:
    write_run(tmp_path, RECORDS, {"max_steps": 100, "max_epochs": 50, "max_minutes": 0.0})
    budget = read_budget(tmp_path)
    assert budget == Budget(100, 50, 0.0)
    progress = run_progress(read_metrics(tmp_path), budget)
    assert progress.step == 30 and progress.fraction == pytest.approx(0.3)
    assert progress.eta_s == pytest.approx(70.0)  # 70 steps at one second each
    by_time = run_progress(RECORDS, Budget(100, 50, 1.0))  # 30 of 60 seconds used: time binds first
    assert by_time.fraction == pytest.approx(0.5) and by_time.eta_s == pytest.approx(30.0)
    assert "minutes" in by_time.limit
    by_epochs = run_progress([train_record(30, 2.0, 30.0, epoch=3)], Budget(1000, 4, 0.0))
    assert by_epochs.fraction == pytest.approx(0.75) and by_epochs.eta_s == pytest.approx(10.0)
    within = run_progress([{**train_record(30, 2.0, 30.0, epoch=2), "epochs_done": 2.5}], Budget(1000, 5, 2.0))
    assert within.fraction == pytest.approx(0.5) and within.eta_s == pytest.approx(30.0)  # epochs bind, not minutes
    assert within.limit == "epoch 3 of 5"
    done = run_progress([train_record(120, 1.0, 120.0)], Budget(100, 50, 0.0))
    assert done.fraction == 1.0 and done.eta_s == 0.0
    assert run_progress([eval_record(20, 2.0, 1.0)], budget) is None  # nothing trained yet


def test_budget_and_scores_are_none_before_they_exist(tmp_path: Path) -> None:
    assert read_budget(tmp_path) is None and final_scores(tmp_path) is None
    (tmp_path / "metrics.json").write_text(json.dumps({"final": "best", "test_greedy": {"bleu": 12.5}}))
    assert final_scores(tmp_path) == {"bleu": 12.5}


def test_metrics_frame_is_tidy_and_keeps_the_last_value_per_step() -> None:
    frame = metrics_frame(RECORDS, LOSS_SERIES)
    assert list(frame.columns) == ["step", "series", "value"]
    train = frame[frame.series == LOSS_SERIES[("train", "loss")]]
    assert train.step.tolist() == [10, 20, 30] and train.value.tolist() == [4.0, 2.9, 2.0]
    assert frame[frame.series == LOSS_SERIES[("eval", "dev_loss")]].value.tolist() == [2.5]
    scores = metrics_frame(RECORDS, SCORE_SERIES)
    assert set(scores.series) == {"dev BLEU", "dev chrF"} and len(scores) == 2


def test_charts_encode_step_against_value_per_series() -> None:
    spec = loss_chart(RECORDS).to_dict()
    assert spec["encoding"]["x"]["field"] == "step" and spec["encoding"]["y"]["field"] == "value"
    assert spec["encoding"]["color"]["field"] == "series"
    assert spec["encoding"]["x"]["axis"] == {"format": "d", "tickMinStep": 1}  # one record at step 1 reads "1"
    assert {"series", "step", "value"} <= {t["field"] for t in spec["encoding"]["tooltip"]}
    assert "score" in score_chart(RECORDS).to_dict()["encoding"]["y"]["title"]


def test_a_series_keeps_its_colour_when_another_appears_and_a_flat_axis_reads_plainly() -> None:
    """Before the first evaluation only the train lines exist; the dev line that comes then takes a colour of its
    own, and the train lines keep theirs. A y axis whose values never change has no "0.000000" tick."""
    early = [r for r in RECORDS if r["kind"] == "train"]
    for records in (early, RECORDS):
        color = loss_chart(records).to_dict()["encoding"]["color"]
        assert color["scale"]["domain"] == list(LOSS_SERIES.values())
    flat = [{"kind": "eval", "step": s, "dev_bleu": 0.0, "dev_chrf": 0.0} for s in (50, 100)]
    assert score_chart(flat).to_dict()["encoding"]["y"]["axis"]["format"] == "~g"  # d3: 0 reads "0", 2.5 "2.5"


def test_charts_keep_their_plot_height_under_title_and_legend() -> None:
    """The page fits the width only: with "fit" the title, axis and bottom legend took the 260 px, leaving a flat line."""
    for chart in (loss_chart(RECORDS), score_chart(RECORDS)):
        spec = chart.to_dict()
        assert spec["autosize"]["type"] == "fit-x" and spec["height"] >= 200


def test_charts_of_an_empty_run_are_still_valid() -> None:
    spec = loss_chart([]).to_dict()
    dataset = next(iter(spec["datasets"].values()))
    assert dataset == []
