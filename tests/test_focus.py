"""Chart builders of the teaching views: their frames and Vega-Lite specs (``chart.to_dict()``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lab.attention.weight_arithmetic import softmax_row
from viz.arithmetic import MINUS_INFINITY, arithmetic_frame, score_chart, weight_bars
from viz.choices import CHOSEN_COLOUR, choice_chart, choice_frame
from viz.focus import CELL_SELECTION, PANEL_SELECTION, clickable, focus_frame, picked, unit_scale, with_focus
from viz.heatmap import attention_frame, attention_heatmap, heads_grid
from viz.positional_curves import curves_frame, default_dimensions, positional_curves

KEYS = ["<s>", "▁The", "▁cat", "▁the"]


def test_arithmetic_frame_shows_minus_infinity_and_exact_zero_for_masked_keys() -> None:
    rng = np.random.default_rng(1)
    allowed = np.array([True, True, False, False])
    row = softmax_row(rng.normal(size=8), rng.normal(size=(4, 8)), allowed)
    frame = arithmetic_frame(KEYS, row.dots, row.scores, row.allowed, row.exps, row.weights)
    assert list(frame["mask M"]) == ["0", "0", MINUS_INFINITY, MINUS_INFINITY]
    assert frame.loc[frame.masked, "weight"].eq(0.0).all() and np.isneginf(frame.loc[frame.masked, "score"]).all()
    assert frame["weight"].sum() == pytest.approx(1.0)
    assert list(frame["position"]) == [1, 2, 3, 4]
    spec = score_chart(frame, "Scores", "key").to_dict()
    layers = spec["layer"]
    assert layers[1]["mark"]["text"] == MINUS_INFINITY  # masked keys drawn as −∞, never as a bar
    bars = weight_bars(frame, "Weights", "key").to_dict()
    assert bars["encoding"]["y"]["scale"]["domain"] == [0, 1]
    assert bars["encoding"]["x"]["sort"] == KEYS
    with pytest.raises(ValueError, match="one per key"):
        arithmetic_frame(KEYS[:3], row.dots, row.scores, row.allowed, row.exps, row.weights)


def test_choice_frame_highlights_the_chosen_token_and_adds_it_when_outside_the_top() -> None:
    top = [("▁cat", 0.6), ("▁dog", 0.2), ("▁car", 0.1)]
    frame = choice_frame(top, "▁cat", 0.6)
    assert list(frame["chosen"]) == [True, False, False]
    beam_pick = choice_frame(top, "▁tree", 0.01)  # beam search can continue a less probable token
    assert list(beam_pick["token"])[-1] == "▁tree" and beam_pick["chosen"].sum() == 1
    spec = choice_chart(frame, "Step 1").to_dict()
    assert spec["encoding"]["x"]["scale"]["domain"] == [0, 1]
    assert spec["encoding"]["color"]["condition"][0]["value"] == CHOSEN_COLOUR


def test_focus_dims_everything_but_the_followed_row_and_column() -> None:
    w = np.full((3, 4), 0.25)
    frame = focus_frame(attention_frame(w, KEYS[1:], KEYS), rows={1}, cols={2})
    assert frame["focus"].sum() == 4 + 3 - 1
    assert frame.loc[frame.row == 1, "focus"].all() and frame.loc[frame.col == 2, "focus"].all()
    chart = clickable(with_focus(attention_heatmap(frame, "t", "query", "key")), CELL_SELECTION, ["row", "col"])
    spec = chart.to_dict()
    assert spec["encoding"]["opacity"]["condition"][0]["value"] == 1.0
    assert spec["params"][0]["name"] == CELL_SELECTION
    grid_frame = focus_frame(attention_frame(np.full((2, 2, 3, 4), 0.25), KEYS[1:], KEYS), rows={0}, cols=())
    grid = clickable(with_focus(heads_grid(grid_frame, "g", "query", "key")), PANEL_SELECTION, ["layer", "head"])
    spec = grid.to_dict()
    assert "opacity" in spec["spec"]["encoding"] and spec["params"][0]["name"] == PANEL_SELECTION


def test_unit_scale_fixes_the_colour_domain_and_keeps_the_masked_grey() -> None:
    w = np.tril(np.full((3, 3), 0.2))
    frame = attention_frame(w, KEYS[1:], KEYS[:3], np.triu(np.ones((3, 3), dtype=bool), 1))
    plain = attention_heatmap(frame, "t", "query", "key").to_dict()["encoding"]["color"]
    shared = unit_scale(attention_heatmap(frame, "t", "query", "key")).to_dict()["encoding"]["color"]
    assert "domain" not in plain["scale"] and shared["scale"]["domain"] == [0, 1]
    assert shared["condition"] == plain["condition"] and shared["scale"]["scheme"] == plain["scale"]["scheme"]
    grid = unit_scale(heads_grid(attention_frame(np.full((1, 2, 3, 3), 0.2), KEYS[1:], KEYS[:3]), "g", "q", "k"))
    assert grid.to_dict()["spec"]["encoding"]["color"]["scale"]["domain"] == [0, 1]


def test_picked_reads_streamlit_selection_events() -> None:
    assert picked({"selection": {CELL_SELECTION: [{"row": 2, "col": 0}]}}, CELL_SELECTION) == {"row": 2, "col": 0}
    assert picked({"selection": {CELL_SELECTION: []}}, CELL_SELECTION) is None
    assert picked(None, CELL_SELECTION) is None


def test_positional_curves_one_line_per_dimension() -> None:
    table = np.sin(np.arange(10)[:, None] / (1.0 + np.arange(16)))  # (10, 16)
    dims = default_dimensions(16)
    assert dims[0] == 0 and all(d % 2 == 0 and d < 16 for d in dims) and dims == sorted(set(dims))
    frame = curves_frame(table, [0, 6, 99])  # out-of-range dimensions are skipped
    assert sorted(frame["dimension"].unique()) == ["dim 0", "dim 6"] and len(frame) == 20
    np.testing.assert_allclose(frame.loc[frame.dimension == "dim 6", "value"], table[:, 6])
    spec = positional_curves(frame, "Positional encoding").to_dict()
    assert spec["mark"]["type"] == "line" and spec["encoding"]["color"]["field"] == "dimension"
    assert isinstance(frame, pd.DataFrame)
