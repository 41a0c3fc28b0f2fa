"""The Teach tab driven through AppTest: on the page, a correction taught to the session's copy, Reset."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import translated
from streamlit.testing.v1 import AppTest

from model.run_dir import WEIGHTS_FILE
from translate.translator import Translator
from views import heavy_slot
from views import teach_tab as view

TEXT = "El gato rojo 3."
TAB = "Teach a correction"


def shown(at: AppTest, key: str) -> str:
    return at.main.get_by_key(key).code[0].value


def test_the_tab_teaches_a_correction_and_reset_drops_it(model_env: Path) -> None:
    weights = model_env / WEIGHTS_FILE
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    original = Translator.load(model_env).translate(TEXT).text
    correction = "The blue dog 3." if original != "The blue dog 3." else "The green car 3."
    at = translated(TEXT, TAB)
    assert any("memorise" in c.value for c in at.caption)  # the view says what it does not prove
    at.text_input(key="teach_text").set_value(correction)
    at.button(key="teach").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert (shown(at, "teach_before"), shown(at, "teach_after")) == (original, correction)
    assert any("now produces the correction" in s.value for s in at.success)
    titles = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert sum("Cross-attention before" in t or "Cross-attention after" in t for t in titles) == 2
    checks = at.main.get_by_key("teach_checks").dataframe[0].value
    assert list(checks.columns) == ["changed", "source", "before", "after"] and len(checks) > 0
    assert not at.button(key="teach_reset").disabled and "teach" not in [b.key for b in at.button]  # one at a time
    at.button(key="teach_reset").click().run()
    assert not at.exception
    assert "teach_text" in [t.key for t in at.text_input] and "taught" not in at.session_state
    assert at.main.get_by_key("translation").text[0].value == original  # the page's model was never changed
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == digest


def test_an_empty_correction_is_refused_on_the_page(model_env: Path) -> None:
    at = translated(TEXT, TAB)
    at.button(key="teach").click().run()
    assert not at.exception
    assert any("Type the right English" in w.value for w in at.warning) and "taught" not in at.session_state


class Rerun(Exception):
    """What a Streamlit call raises when the session reruns or its tab closes mid-script."""


@pytest.mark.parametrize("raises_in", ["the progress bar", "emptying the bar", "teaching"])
def test_the_server_wide_slot_is_released_whatever_raises(raises_in: str, monkeypatch: pytest.MonkeyPatch) -> None:
    class Bar:
        def progress(self, *args: object, **kwargs: object) -> None: ...

        def empty(self) -> None:
            if raises_in == "emptying the bar":
                raise Rerun

    def progress(*args: object, **kwargs: object) -> Bar:
        if raises_in == "the progress bar":
            raise Rerun
        return Bar()

    def teach(*args: object) -> object:
        if raises_in == "teaching":
            raise Rerun
        return object()

    monkeypatch.setattr(view.st, "progress", progress)
    monkeypatch.setattr(view, "teach", teach)
    request = SimpleNamespace(model="m", beam_size=1, length_penalty=1.0, name_guard=True)
    with pytest.raises(Rerun):
        view.run_teach(None, request, TEXT, "The red cat 3.", None)  # type: ignore[arg-type]
    assert heavy_slot.asking() == 0  # the slot is free: the next session, or this one, may teach
