"""The smaller panels' charts and text: top-5 axis, the beam table, printed weights, file names, positional charts."""

from __future__ import annotations

import numpy as np
import pytest

from lab.attention.step_choices import NOT_YET, Beam, BeamStep, step_table
from viz.architecture_diagram import curves_frame, positional_curves
from viz.arithmetic import weight_text
from viz.choices import choice_chart, choice_frame


def test_the_top_5_axis_has_a_few_ticks_from_0_to_1() -> None:
    frame = choice_frame([("a", 0.6), ("b", 0.3)], "a", 0.6)
    axis = choice_chart(frame, "Step 1").to_dict()["encoding"]["x"]["axis"]
    assert 3 <= len(axis["values"]) <= 5 and min(axis["values"]) == 0 and max(axis["values"]) == 1


def test_the_beam_table_says_a_growing_hypothesis_has_no_score_yet() -> None:
    def beam(ids: list[int]) -> Beam:
        return Beam(ids, [str(i) for i in ids], "", -0.5, -0.25)

    table = step_table(BeamStep(1, [beam([5, 6]), beam([5, 7])], [beam([5, 3])]))
    assert [row["score"] for row in table] == [NOT_YET, NOT_YET, "-0.250"]
    assert not [row for row in table if any(value is None or value == "None" for value in row.values())]


@pytest.mark.parametrize("value", [0.9996, 0.99996, 1 - 1e-9, 1 - 1e-15, 0.5, 0.1234567, 4e-4, 1e-7, 2e-14, 0.0, 1.0])
def test_a_weight_below_1_never_prints_as_1_nor_a_positive_one_as_0(value: float) -> None:
    text = weight_text(value)
    shown = 1 - float(text.removeprefix("1 − ")) if text.startswith("1 − ") else float(text)
    assert (shown == 1.0) == (value == 1.0) and (shown == 0.0) == (value == 0.0)
    assert shown == pytest.approx(value, rel=1e-2)
    assert len(text) <= 14  # never a wall of digits


def sinusoids(n_positions: int, d_model: int = 32) -> np.ndarray:
    positions, dims = np.arange(n_positions)[:, None], np.arange(d_model)[None, :]
    return np.sin(positions / 10000 ** (dims / d_model))


def test_positional_curves_shade_the_sentence_and_drop_the_dots_on_long_curves() -> None:
    frame = curves_frame(sinusoids(64), [0, 2])
    spec = positional_curves(frame, "Positional encoding, one curve per dimension", sentence=7).to_dict()
    band, lines = spec["layer"]
    (shaded,) = band["data"]["values"]  # inline, so the curves stay the chart's one dataset
    assert band["mark"]["type"] == "rect" and (shaded["position"], shaded["end"]) == (0, 6.5)
    # the x axis starts at position 0, not at the −4 a "nice" scale drew
    assert band["encoding"]["x"]["scale"]["domainMin"] == lines["encoding"]["x"]["scale"]["domainMin"] == 0
    assert lines["mark"]["type"] == "line" and not lines["mark"].get("point")
    assert spec["height"] >= 240
