"""The Step by step tab, the positional tab and the downloads driven through the app with AppTest (tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from conftest import APP
from streamlit.testing.v1 import AppTest

STEP_MAPS = ("Masked self-attention at this step", "Cross-attention at this step")


def opened(tab: str, text: str = "El perro azul 7.", beam: bool = False) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    if beam:
        at.radio(key="search").set_value("beam search").run()
    at.text_area(key="source").set_value(text)
    at.button(key="translate").click().run()
    at.session_state["view"] = tab
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def chart_titles(block: object) -> list[str]:
    """The titles of the charts inside an AppTest block (its own and its children's)."""
    titles = []
    for chart in block.get("vega_lite_chart"):
        title = json.loads(chart.proto.spec).get("title", "")
        titles.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return titles


def rows_of_columns(node: object) -> list[list[object]]:
    """Every row of columns under ``node`` (a block whose children are all columns), in page order."""
    children = list(getattr(node, "children", {}).values()) if isinstance(getattr(node, "children", None), dict) else []
    rows = [children] if children and all(type(c).__name__ == "Column" for c in children) else []
    for child in children:
        rows += rows_of_columns(child)
    return rows


def test_the_step_controls_sit_in_one_row_with_the_charts_they_drive(model_env: Path) -> None:
    at = opened("Step by step")
    (row,) = [row for row in rows_of_columns(at.main) if "Step 1: the top 5" in chart_titles(row[0])]
    controls, *maps = row
    assert controls.button(key="step_next") and controls.slider(key="step")  # the buttons and the top 5 beside …
    assert [chart_titles(column) for column in maps] == [[title] for title in STEP_MAPS]  # … both step maps
    at.button(key="step_next").click().run()
    assert at.slider(key="step").value == 2 and "Step 2: the top 5" in chart_titles(at.main)
    labels = "".join(b.label for b in at.button)
    assert not [ch for ch in labels if ord(ch) > 0x2400]  # no emoji-range symbols: they are boxes without the font


def test_greedy_and_beam_steps_say_what_their_search_did(model_env: Path) -> None:
    greedy = opened("Step by step")
    assert any("greedy" in c.value for c in greedy.caption)
    at = opened("Step by step", beam=True)
    assert not any("greedy" in c.value for c in at.caption)  # beam mode never speaks of greedy's choice
    table = at.main.get_by_key("beam_table").dataframe[0].value
    assert table.notna().all().all() and "None" not in set(table.astype(str).to_numpy().ravel())
    (tree,) = [c for c in at.get("vega_lite_chart") if "Beam search tree" in c.proto.spec]
    spec = json.loads(tree.proto.spec)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "rule", "circle", "text"]
    at.button(key="step_next").click().run()
    assert not at.exception and at.slider(key="step").value == 2


def test_the_positional_tab_shows_more_positions_than_the_sentence(model_env: Path) -> None:
    at = opened("Positional encoding")
    (chart,) = [c for c in at.get("vega_lite_chart") if "one curve per dimension" in c.proto.spec]
    spec = json.loads(chart.proto.spec)
    assert spec["height"] >= 240 and spec["layer"][0]["mark"]["type"] == "rect"  # the sentence shaded
    (shaded,) = spec["layer"][0]["data"]["values"]  # the sentence: positions 0 … end
    (dataset,) = chart.proto.datasets  # the curves, sent as Arrow
    positions = pa.ipc.open_stream(dataset.data.data).read_all().column("position").to_pylist()
    assert max(positions) > shaded["end"] + 1  # the curves run on past the sentence
