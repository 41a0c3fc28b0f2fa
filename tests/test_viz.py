"""Chart builders: their tidy DataFrames and the Vega-Lite specs they produce (``chart.to_dict()``)."""

from __future__ import annotations

import html
import json
import re

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import vl_convert

from lab.attention.weight_arithmetic import softmax_row
from viz.alignment_lines import MAX_WORDS_SHOWN, alignment_chart, alignment_frames
from viz.architecture_diagram import curves_frame, default_dimensions, positional_curves
from viz.arithmetic import MINUS_INFINITY, arithmetic_frame, score_chart, weight_bars
from viz.choices import CHOSEN_COLOUR, choice_chart, choice_frame
from viz.heatmap import (
    CELL_SELECTION,
    MASKED_COLOUR,
    MAX_AXIS_LABELS,
    PANEL_SELECTION,
    WEIGHT_TEXT,
    attention_frame,
    attention_heatmap,
    clickable,
    focus_frame,
    heads_grid,
    map_height,
    thinned,
    unique_labels,
    unit_scale,
    weight_expression,
    with_focus,
)
from viz.whatif_charts import change_chart, change_frame

ROWS = ["▁The", "▁cat", "▁the", "</s>"]  # what each row predicts
COLS = ["<s>", "▁The", "▁cat", "▁the"]  # decoder inputs


def causal_weights() -> tuple[np.ndarray, np.ndarray]:
    future = np.triu(np.ones((4, 4), dtype=bool), 1)
    w = np.where(future, 0.0, 1.0)
    return w / w.sum(1, keepdims=True), future


def test_unique_labels_keep_repeated_tokens_apart_in_order() -> None:
    assert unique_labels(["▁the", "▁cat", "▁the", "▁the"]) == ["▁the", "▁cat", "▁the (2)", "▁the (3)"]
    tricky = ["x (2)", "x", "x"]
    assert len(set(unique_labels(tricky))) == 3 and unique_labels(tricky)[:2] == ["x (2)", "x"]


def test_attention_frame_is_tidy_and_keeps_the_mask() -> None:
    w, future = causal_weights()
    frame = attention_frame(w, ROWS, COLS, future, inputs=COLS)
    assert len(frame) == 16
    assert {"row", "col", "row_label", "col_label", "row_input", "weight", "masked"} <= set(frame.columns)
    cell = frame[(frame.row == 1) & (frame.col == 0)].iloc[0]
    assert (cell.row_label, cell.row_input, cell.col_label, cell.weight) == ("▁cat", "▁The", "<s>", 0.5)
    assert frame.loc[frame.masked, "weight"].eq(0.0).all()
    assert frame.masked.sum() == future.sum()
    np.testing.assert_allclose(frame.groupby("row").weight.sum(), 1.0)


def test_attention_frame_of_all_layers_and_heads_numbers_them_from_one() -> None:
    w = np.full((2, 3, 4, 4), 0.25)
    frame = attention_frame(w, ROWS, COLS)
    assert len(frame) == 2 * 3 * 16
    assert sorted(frame.layer.unique()) == [1, 2] and sorted(frame["head"].unique()) == [1, 2, 3]
    assert sorted(attention_frame(w[1:], ROWS, COLS, first_layer=2).layer.unique()) == [2]  # one layer, numbered


def arrow_bytes(frame: pd.DataFrame) -> int:
    """What the page receives for a chart's data: the frame as an Arrow stream (how Streamlit sends it)."""
    table = pa.Table.from_pandas(frame)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().size


def test_attention_frames_are_compact_on_the_wire() -> None:
    rows, cols = [f"▁word{i}" for i in range(160)], [f"▁palabra{i}" for i in range(100)]
    w = np.full((160, 100), 0.01)
    frame = attention_frame(w, rows, cols, np.zeros((160, 100), bool), inputs=["<s>", *rows[:-1]])
    assert arrow_bytes(frame) / len(frame) < 20  # labels are sent once per token, not once per cell


def test_attention_frame_rejects_labels_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="do not match"):
        attention_frame(np.zeros((2, 3)), ["a", "b"], ["x", "y"])


def test_heatmap_spec_orders_axes_like_the_sentence_and_greys_the_future() -> None:
    w, future = causal_weights()
    spec = attention_heatmap(attention_frame(w, ROWS, COLS, future), "Decoder", "predicts", "input").to_dict()
    enc = spec["encoding"]
    assert spec["mark"]["type"] == "rect"
    assert enc["y"]["field"] == "row_label" and enc["y"]["sort"] == unique_labels(ROWS)
    assert enc["x"]["field"] == "col_label" and enc["x"]["sort"] == COLS and enc["x"]["sort"][0] == "<s>"
    assert enc["color"]["condition"] == {"test": "datum.masked", "value": MASKED_COLOUR}  # blank, not a low weight
    assert enc["color"]["field"] == "weight"
    assert [t["field"] for t in enc["tooltip"]][:3] == ["row_label", "col_label", WEIGHT_TEXT]
    assert spec["title"]["text"] == "Decoder"
    assert "values" not in enc["x"]["axis"] and "values" not in enc["y"]["axis"]  # few tokens: every label


def test_the_tooltip_weight_never_reads_1_000_below_1_nor_0_000_above_0() -> None:
    """The tooltips' weight text, computed by Vega itself (rendered as text marks through vl-convert)."""
    weights = [0.99996, 0.9995, 0.9994, 0.5, 0.0004, 2.1e-5, 0.0, 1.0]
    chart = alt.Chart(pd.DataFrame({"weight": weights, "i": range(len(weights))}))
    chart = (
        chart.transform_calculate(shown=weight_expression())
        .mark_text()
        .encode(y=alt.Y("i:O", axis=None), text="shown:N")
    )
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", vl_convert.vegalite_to_svg(chart.to_dict()))
    shown = [html.unescape(t) for t in texts]
    assert len(shown) == len(weights), shown
    assert not any(text == "1.000" for text, w in zip(shown, weights, strict=True) if w < 1)
    assert not any(text == "0.000" for text, w in zip(shown, weights, strict=True) if w > 0)
    assert shown[3] == "0.500" and shown[6:] == ["0", "1"]


def test_the_maps_legend_is_titled() -> None:
    frame = attention_frame(np.full((4, 4), 0.25), COLS, COLS)
    assert attention_heatmap(frame, "Encoder", "q", "k").to_dict()["encoding"]["color"]["title"] == "attention weight"


def test_decoder_tooltip_names_the_query_input_and_the_predicted_token_apart() -> None:
    w, future = causal_weights()
    spec = attention_heatmap(attention_frame(w, ROWS, COLS, future, inputs=COLS), "Decoder", "p", "i").to_dict()
    titles = {t["field"]: t["title"] for t in spec["encoding"]["tooltip"]}
    assert titles["row_label"] == "query: input → predicts"  # the row's label names both: "<s> → ▁The" …
    assert titles["row_input"] == "computed at decoder input"  # … and the input(s) a word row averages over
    encoder = attention_heatmap(attention_frame(np.full((4, 4), 0.25), COLS, COLS), "Encoder", "q", "k").to_dict()
    assert {t["field"]: t["title"] for t in encoder["encoding"]["tooltip"]}["row_label"] == "query token"


def test_long_axes_label_every_kth_token_and_say_so() -> None:
    rows, cols = [f"r{i}" for i in range(30)], [f"c{i}" for i in range(100)]
    spec = attention_heatmap(attention_frame(np.full((30, 100), 0.01), rows, cols), "Cross", "rows", "cols").to_dict()
    x, y = spec["encoding"]["x"], spec["encoding"]["y"]
    assert len(x["axis"]["values"]) <= MAX_AXIS_LABELS and len(y["axis"]["values"]) <= MAX_AXIS_LABELS
    assert x["axis"]["values"][:2] == ["c0", "c5"] and "1 label in 5" in x["title"]
    assert len(x["sort"]) == 100  # every cell is still drawn, in sentence order
    assert thinned(list("abcd"), 4) == (list("abcd"), 1) and thinned(list("abcde"), 2) == (["a", "d"], 3)


def test_heads_grid_is_a_layers_by_heads_facet() -> None:
    frame = attention_frame(np.full((2, 2, 4, 4), 0.25), ROWS, COLS)
    spec = heads_grid(frame, "all heads", "predicts", "input").to_dict()
    assert spec["facet"]["row"]["field"] == "layer" and spec["facet"]["column"]["field"] == "head"
    assert spec["spec"]["mark"]["type"] == "rect"
    assert {"layer", "head", "row_label", "col_label", WEIGHT_TEXT} <= {
        t["field"] for t in spec["spec"]["encoding"]["tooltip"]
    }


def test_grid_panels_leave_room_for_token_labels_and_axis_titles() -> None:
    """A short sentence's panels are tall enough for one label per row and the repeated "query (…)" title (the
    titles of 72-px panels ran into each other: "query (Spanish)query (Spanish)…"); long ones stay capped."""
    frame = attention_frame(np.full((2, 2, 6, 6), 1 / 6), [*ROWS, "a", "b"], [*COLS, "c", "d"])
    spec = heads_grid(frame, "g", "q", "k").to_dict()["spec"]
    assert spec["height"] >= 100 and spec["width"] >= 100 and spec["height"] / 6 >= 14
    tokens = [f"t{i}" for i in range(20)]
    long = heads_grid(attention_frame(np.full((1, 1, 20, 20), 0.05), tokens, tokens), "g", "q", "k").to_dict()
    assert long["spec"]["height"] <= 240 and long["spec"]["width"] <= 240


def test_alignment_frames_link_each_target_to_its_source() -> None:
    tokens, links = alignment_frames(
        ["El", "gato", "</s>"], ["The", "cat"], [(0, 0, 0.9), (1, 1, 0.6)], "Spanish", "English"
    )
    assert list(tokens.side) == ["Spanish"] * 3 + ["English"] * 2
    assert tokens.x.between(0, 1).all()
    assert list(links.target) == ["The", "cat"] and list(links.source) == ["El", "gato"]
    first = links.iloc[0]
    assert first.x == tokens[(tokens.side == "English") & (tokens.position == 0)].x.iloc[0]
    assert first.x2 == tokens[(tokens.side == "Spanish") & (tokens.position == 0)].x.iloc[0]
    spec = alignment_chart(tokens, links, "Alignment", "Spanish", "English").to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks[0] == "rule" and "text" in marks
    assert {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]} == {"target", "source", "weight"}


@pytest.mark.parametrize(("src", "tgt"), [("Portuguese", "English"), ("English", "Spanish")])
def test_alignment_chart_names_the_models_languages(src: str, tgt: str) -> None:
    """Sides, colours, tooltips and word layers name the model's languages; "Spanish" only when it is one."""
    tokens, links = alignment_frames(["O", "gato", "</s>"], ["The", "cat"], [(0, 0, 0.9), (1, 1, 0.6)], src, tgt)
    assert set(tokens.side) == {src, tgt}
    spec = alignment_chart(tokens, links, "Alignment", src, tgt).to_dict()
    rules, points, above, below = spec["layer"]
    assert [t.get("title") for t in rules["encoding"]["tooltip"][:2]] == [tgt, src]
    assert points["encoding"]["color"]["scale"]["domain"] == [src, tgt]
    text = json.dumps(spec)
    assert src in json.dumps(above["transform"]) and tgt in json.dumps(below["transform"])
    assert ("Spanish" in text) == ("Spanish" in (src, tgt))


def test_alignment_sides_of_one_language_stay_apart() -> None:
    tokens, links = alignment_frames(["a", "b"], ["c"], [(0, 1, 1.0)], "Portuguese", "Portuguese")
    assert list(tokens.side) == ["Portuguese (source)"] * 2 + ["Portuguese (target)"]
    spec = alignment_chart(tokens, links, "Alignment", "Portuguese", "Portuguese").to_dict()
    assert len(set(spec["layer"][1]["encoding"]["color"]["scale"]["domain"])) == 2


def test_alignment_writes_every_kth_token_of_a_long_side() -> None:
    source = [f"s{i}" for i in range(100)]
    tokens, _ = alignment_frames(source, ["a", "b"], [], "Spanish", "English")
    spanish = tokens[tokens.side == "Spanish"]
    assert 0 < spanish.written.sum() <= MAX_WORDS_SHOWN and tokens[tokens.side == "English"].written.all()


def test_alignment_with_no_links_still_draws() -> None:
    tokens, links = alignment_frames(["</s>"], [], [], "Spanish", "English")
    assert links.empty
    assert alignment_chart(tokens, links, "empty", "Spanish", "English").to_dict()["layer"]


def test_token_text_is_data_never_markup() -> None:
    nasty = ["<b>x</b>", "**y**", "😀", '"q"']
    frame = attention_frame(np.full((4, 4), 0.25), nasty, nasty)
    spec = attention_heatmap(frame, "t", "r", "c").to_dict()
    assert spec["encoding"]["y"]["sort"] == nasty  # carried as plain strings in the data
    json.dumps(spec)


def test_frames_are_plain_pandas() -> None:
    w, future = causal_weights()
    assert isinstance(attention_frame(w, ROWS, COLS, future), pd.DataFrame)


def shown_labels(spec: dict) -> list[str]:
    """The column labels a rendered map shows (Vega draws those it drops for overlap at opacity 0)."""
    svg = vl_convert.vegalite_to_svg(spec)
    return re.findall(r'rotate\(270\)[^>]*opacity="1">([^<]+)</text>', svg)


def test_a_narrow_map_shows_every_other_column_label_rather_than_overlap_them() -> None:
    """Column labels stand upright; a map as narrow as one of three on a 1280-px screen shows every other label of
    20 columns (none touching), a wide one all 20; the legend lies under the map, leaving it its whole width."""
    cols = [f"w{i}" for i in range(20)]
    chart = attention_heatmap(attention_frame(np.full((20, 20), 0.05), cols, cols), "Encoder", "q", "k")
    spec = chart.to_dict()
    assert spec["encoding"]["x"]["axis"]["labelAngle"] == -90 and spec["encoding"]["x"]["axis"]["labelOverlap"]
    assert spec["encoding"]["y"]["axis"]["labelOverlap"] is False  # rows have room for each label
    assert spec["encoding"]["color"]["legend"]["orient"] == "bottom"
    narrow, wide = (shown_labels(chart.properties(width=width).to_dict()) for width in (300, 900))
    assert wide == cols
    assert narrow == cols[::2]


def test_the_change_map_labels_every_row_like_the_maps() -> None:
    """Vega's default drops every other label it finds too close ("parity"); the change map labels each row, as
    the attention maps do, drawn at the maps' height per row."""
    rows = [f"w{i}" for i in range(20)]
    frame = change_frame(np.zeros((20, 3)), np.full((20, 3), 0.1), rows, ["x", "y", "z"])
    spec = change_chart(frame, "t", "output", "source").properties(width=400).to_dict()
    assert spec["encoding"]["y"]["axis"]["labelOverlap"] is False and "values" not in spec["encoding"]["y"]["axis"]
    assert spec["height"] == map_height(20)
    assert set(re.findall(r">(w\d+)</text>", vl_convert.vegalite_to_svg(spec))) == set(rows)


# --- the teaching views' charts, the followed token's dimming, the shared scale ---

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


def test_positional_curves_one_line_per_dimension() -> None:
    table = np.sin(np.arange(10)[:, None] / (1.0 + np.arange(16)))  # (10, 16)
    dims = default_dimensions(16)
    assert dims[0] == 0 and all(d % 2 == 0 and d < 16 for d in dims) and dims == sorted(set(dims))
    frame = curves_frame(table, [0, 6, 99])  # out-of-range dimensions are skipped
    assert sorted(frame["dimension"].unique()) == ["dim 0", "dim 6"] and len(frame) == 20
    np.testing.assert_allclose(frame.loc[frame.dimension == "dim 6", "value"], table[:, 6])
    lines = positional_curves(frame, "Positional encoding", 3).to_dict()["layer"][1]
    assert lines["mark"]["type"] == "line" and lines["encoding"]["color"]["field"] == "dimension"
    assert isinstance(frame, pd.DataFrame)
