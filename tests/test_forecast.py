"""The forecast before Start (jobs/forecast.py): read from a small learning-curve table written here."""

from __future__ import annotations

import itertools
import json

import pytest

from jobs.forecast import POOR_BLEU, ForecastError, forecast, load_table, parse_table

TABLE = {
    "preset": "small",
    "factor": 1.5,
    "curves": [
        {"mode": "scratch", "pairs": 1000, "points": [[100, 0.5], [200, 1.0], [400, 2.0]]},
        {"mode": "scratch", "pairs": 4000, "points": [[100, 0.6], [200, 2.0], [400, 6.0]]},
        {"mode": "scratch", "pairs": 16000, "points": [[100, 0.7], [200, 3.0], [400, 12.0], [800, 25.0]]},
        {"mode": "finetune", "pairs": 1000, "points": [[50, 45.0], [100, 46.0], [200, 47.0]]},
    ],
}


@pytest.fixture
def table():
    return parse_table(TABLE)


def test_monotone_in_steps_and_pairs_inside_the_table(table):
    pairs, steps = [1000, 2000, 4000, 8000, 16000], [100, 150, 200, 300, 400]
    grid = {(p, s): forecast(p, s, "scratch", "es", "en", table) for p, s in itertools.product(pairs, steps)}
    assert all(not f.beyond for f in grid.values())
    for p, s in grid:
        f = grid[p, s]
        assert f.low <= f.bleu <= f.high
        if s != steps[-1]:
            assert grid[p, steps[steps.index(s) + 1]].bleu >= f.bleu
        if p != pairs[-1]:
            assert grid[pairs[pairs.index(p) + 1], s].bleu >= f.bleu


def test_a_measured_point_is_read_back(table):
    assert forecast(4000, 400, "scratch", "es", "en", table).bleu == pytest.approx(6.0)
    made = forecast(16000, 800, "scratch", "es", "en", table)
    assert made.bleu == pytest.approx(25.0) and made.low == pytest.approx(25 / 1.5)


def test_extrapolation_is_flagged_and_widens_the_range(table):
    inside = forecast(16000, 800, "scratch", "es", "en", table)
    more_steps = forecast(16000, 3200, "scratch", "es", "en", table)
    assert more_steps.beyond == ("more steps (3,200) than the curves measured (up to 800)",)
    assert more_steps.high / more_steps.bleu > inside.high / inside.bleu
    assert forecast(500, 200, "scratch", "es", "en", table).beyond == (
        "fewer pairs (500) than the smallest curve's 1,000",
    )
    assert forecast(4000, 200, "finetune", "es", "en", table).beyond == (
        "more pairs (4,000) than the largest curve's 1,000",
    )
    assert forecast(1000, 59, "scratch", "es", "en", table).beyond == (
        "fewer steps (59) than the curves begin with (100)",
    )
    assert 0 <= forecast(100, 10, "scratch", "es", "en", table).bleu <= 100


def test_advice_when_poor_and_fine_tuning_only_from_spanish_to_english(table):
    for pairs, steps, src in itertools.product([1000, 4000, 16000], [100, 400, 800], ["es", "fr"]):
        made = forecast(pairs, steps, "scratch", src, "en", table)
        assert bool(made.advice) == (made.bleu < POOR_BLEU)
        assert any("fine-tune" in a for a in made.advice) == (src == "es" and made.bleu < POOR_BLEU)
    assert not any("fine-tune" in a for a in forecast(1000, 100, "scratch", "es", "fr", table).advice)
    assert any("more data" in a for a in forecast(1000, 400, "scratch", "de", "en", table).advice)
    assert any("longer" in a for a in forecast(4000, 200, "scratch", "de", "en", table).advice)


def test_a_malformed_table_is_refused_naming_the_field(tmp_path):
    bad = {"curves": [{"mode": "scratch", "pairs": 1000, "points": [[0, 1.0]]}]}
    with pytest.raises(ForecastError, match=r"curves\[0\]\.points"):
        parse_table(bad)
    with pytest.raises(ForecastError, match=r"curves\[0\]\.mode"):
        parse_table({"curves": [{"mode": "gpu", "pairs": 1, "points": [[1, 1]]}]})
    with pytest.raises(ForecastError, match="preset"):
        parse_table({k: v for k, v in TABLE.items() if k != "preset"})
    with pytest.raises(ForecastError, match="no learning-curve table"):
        load_table(tmp_path / "missing.json")
    (tmp_path / "t.json").write_text(json.dumps(TABLE))
    assert len(load_table(tmp_path / "t.json").curves) == 4
    with pytest.raises(ValueError, match="pairs and steps"):
        forecast(0, 10, "scratch", "es", "en", parse_table(TABLE))


def test_the_page_says_it_in_plain_sentences(table):
    from translate.translator import DEFAULT_MODEL
    from views.train_estimate import forecast_sentences, start_mode

    langs = ("es", "en")
    text = forecast_sentences(1000, 1600, "scratch", "small", langs, table)
    assert text.startswith("Forecast: about ") and "beyond what was measured" in text and "fine-tune" in text
    assert "beyond" not in forecast_sentences(1000, 200, "finetune", "small", langs, table)
    assert start_mode([]) == "scratch" and start_mode(["run.init_from=/elsewhere/run"]) is None
    assert start_mode([f"run.init_from={DEFAULT_MODEL}", "optim.lr=0.0001"]) == "finetune"
    assert "fewer steps (59) than the curves begin with (100)" in forecast_sentences(
        1000, 59, "scratch", "small", langs, table
    )
    assert "under 1 dev BLEU" in forecast_sentences(100, 59, "scratch", "small", langs, table)  # never "about 0 (0–0)"
    # every preset in words: the tiny one's measured run; fine-tuning with it, read through its batches' tokens
    tiny = forecast_sentences(1000, 200, "scratch", "tiny", langs, table)
    assert tiny.startswith("Forecast: under 1 dev BLEU") and "at most 0.3 dev BLEU" in tiny and "8,000 steps" in tiny
    tuned = forecast_sentences(1000, 400, "finetune", "tiny", langs, table)
    assert tuned.startswith("Forecast: about 45 dev BLEU") and "read as 50 of the curves' 4,096-token batches" in tuned
    assert forecast_sentences(1000, 200, "scratch", "base", langs, table).startswith("No forecast for a “base” model")
    assert forecast_sentences(1000, 200, None, "small", langs, table).startswith("No forecast: ")
    for text in (tiny, tuned, forecast_sentences(100, 59, "scratch", "small", langs, table)):
        assert "(0–0)" not in text and "measured up to" not in text


def test_the_workshop_table_holds_out_each_size_and_names_its_preset(tmp_path, capsys):
    from workshop.learning_curve import check, write_table

    out = tmp_path / "curve.json"
    write_table([dict(c, dev_sentences=100, minutes=1.0) for c in TABLE["curves"]], out)
    written = json.loads(out.read_text())
    made = parse_table(written)
    assert made.preset == "small" and len(made.curves) == 4
    assert [c["pairs"] for c in written["held_out"]] == [1000, 4000, 16000]
    assert made.factor == max(1.5, *(c["factor"] for c in written["held_out"]))
    tries = tmp_path / "tries.json"  # runs the table never saw, each printed beside its forecast
    write_table([{"mode": "scratch", "pairs": 2000, "points": [[200, 1.5]], "dev_sentences": 9, "minutes": 1}], tries)
    check(tries, out)
    assert capsys.readouterr().out.startswith("scratch 2,000 pairs: factor 1.")


def test_beyond_the_measured_steps_each_doubling_adds_half_the_one_before(table):
    at = [forecast(16000, 800 * 2**k, "scratch", "es", "en", table).bleu for k in range(5)]
    gains = [b - a for a, b in itertools.pairwise(at)]
    assert all(g2 == pytest.approx(g1 / 2) for g1, g2 in itertools.pairwise(gains))
    assert at[-1] < at[0] + 2 * gains[0]  # flattening: never more than twice the first doubling beyond
