"""The maps of the Translate page (views/maps.py): the first screen opens its example without a Session State warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import APP
from streamlit.elements.lib import policies
from streamlit.testing.v1 import AppTest

from lab.page.examples import EXAMPLES
from translate.translator import DEFAULT_MODEL
from views.maps import LAYER_KEYS, picked
from viz.heatmap import CELL_SELECTION


class Caught(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def shipped_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The app on the shipped model (its example's layer is not the last one), an empty runs folder, one thread."""
    if not (DEFAULT_MODEL / "model.safetensors").exists():
        pytest.skip("the shipped model is not in checkpoints/")
    monkeypatch.delenv("LAB_MODEL_DIR", raising=False)
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    return DEFAULT_MODEL


def test_the_first_screen_opens_its_example_without_a_session_state_warning(
    shipped_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worked example sets the maps' layer and head in Session State; no widget also gets it as a default."""
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)  # Streamlit warns once per process
    caught, logger = Caught(), logging.getLogger(policies.__name__)
    logger.addHandler(caught)
    try:
        at = AppTest.from_file(APP, default_timeout=60).run()
    finally:
        logger.removeHandler(caught)
    assert not at.exception
    assert at.text_area(key="source").value == EXAMPLES[0].source
    assert not [line for line in caught.lines if "Session State API" in line], caught.lines
    claim = EXAMPLES[0].claim
    for kind, key in LAYER_KEYS.items():  # the example's layer where it names one, the last layer elsewhere
        last = len(at.selectbox(key=key).options) - 1
        assert at.selectbox(key=key).value == (claim.layer if kind == claim.kind else last), kind
    assert claim.layer != len(at.selectbox(key=LAYER_KEYS[claim.kind]).options) - 1  # the case that warned


def test_picked_reads_streamlit_selection_events() -> None:
    assert picked({"selection": {CELL_SELECTION: [{"row": 2, "col": 0}]}}, CELL_SELECTION) == {"row": 2, "col": 0}
    assert picked({"selection": {CELL_SELECTION: []}}, CELL_SELECTION) is None
    assert picked(None, CELL_SELECTION) is None
