"""The Where did it learn this? tab through AppTest: on the page, its index built in the background while the page
stays usable, then the neighbours of the sentence and of a chosen output token."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab.neighbours import sentence_index
from lab.neighbours.sentence_index import index_path, weights_sha256
from translate.settings import repo_relative, runs_folder
from views.neighbours_tab import builds

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TAB = "Where did it learn this?"


def open_tab(text: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value(text)
    at.button(key="translate").click().run()
    assert TAB in at.pills(key="view").options
    at.session_state["view"] = TAB
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def shown(at: AppTest) -> bool:
    """Both neighbour tables are on the page."""
    try:
        return all(at.main.get_by_key(key) for key in ("neighbours_sentence", "neighbours_token_table"))
    except KeyError:
        return False


def wait_for_index(at: AppTest, timeout: float = 60) -> None:
    """Rerun the page until the background build has finished and the tables are shown."""
    deadline = time.monotonic() + timeout
    while not shown(at):
        assert time.monotonic() < deadline, "the index was not built in time"
        time.sleep(0.2)
        at.run()
        assert not at.exception, [e.message for e in at.exception]


def test_the_tab_builds_its_index_in_the_background_and_shows_neighbours(
    model_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()  # the build waits for it: the test sees the page while the index is being built
    build = sentence_index.build
    monkeypatch.setattr(sentence_index, "build", lambda *args: gate.wait(30) and build(*args))
    builds()[1].clear()  # a build of an earlier test in this process is not this one
    at = open_tab("El gato rojo 3.")
    assert at.get("progress") and "Building this model's index" in at.get("progress")[0].proto.text
    at.session_state["view"] = "Positional encoding"  # the page stays usable meanwhile
    at.run()
    assert not at.exception and not at.get("progress")
    at.session_state["view"] = TAB
    gate.set()
    wait_for_index(at)
    assert any("not a causal explanation" in c.value for c in at.caption)
    assert any(repo_relative(model_env) in c.value and "splits/train.tsv" in c.value for c in at.caption)
    sentences = at.main.get_by_key("neighbours_sentence").dataframe[0].value
    assert list(sentences.columns) == ["similarity", "Spanish", "English"] and 0 < len(sentences) <= 8
    assert list(sentences["similarity"]) == sorted(sentences["similarity"], reverse=True)
    (spec,) = [c.proto.spec for c in at.get("vega_lite_chart") if "main direction 1" in c.proto.spec]
    assert "indexed pairs (sample seed 0)" in spec  # the training set as a map, the sentence on it
    token = at.selectbox(key="neighbours_token")
    token.set_value(len(token.options) - 1).run()  # the last word piece
    assert not at.exception, [e.message for e in at.exception]
    states = at.main.get_by_key("neighbours_token_table").dataframe[0].value
    assert 0 < len(states) <= 8 and all("⟦" in english for english in states["English"])
    cache = index_path(model_env, runs_folder(), weights_sha256(model_env))
    assert cache.is_file()  # kept for the next server, in the runs folder: the model folder is outside it
