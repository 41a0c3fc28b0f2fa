"""The name guard on the Translate page: what the model read is said beside the translation, one click shows the model
alone with its own maps, the session's switch holds, and a sentence the guard gave up on says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import APP, COLOURS, NOUNS, translate
from streamlit.testing.v1 import AppTest

from model.run_dir import NAME_GUARD_FILE
from translate.name_guard import NameGuard
from translate.translator import KEEP_HELP
from views.guarded_result import GUARD_KEY


@pytest.fixture
def guarded_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model_dir: Path) -> Path:
    """The tiny model with a guard of its own: its toy words and numbers known, "Ana" a listed name read as Mary (a
    name the toy model never saw, so the guard must give up on it), numbers it cannot know read as 12."""
    model = tmp_path / "guarded"
    shutil.copytree(tiny_model_dir, model)
    known = {w: 50 for w in ["el", *COLOURS, *NOUNS, *map(str, range(20))]}
    stand_ins = {"male": (), "female": ("Mary",), "place": (), "number": ("12",)}
    guard = NameGuard(
        known, {}, {"el": 400}, frozenset(), frozenset(), {"ana": "female"}, frozenset(), stand_ins, {"": 0.0}
    )
    guard.save(model / NAME_GUARD_FILE)
    monkeypatch.setenv("LAB_MODEL_DIR", str(model))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    return model


def beside(at: AppTest) -> list[str]:
    """What the guard's place beside the translation says."""
    block = at.main.get_by_key("guard")
    return [e.value for kind in ("info", "caption") for e in block.get(kind)]


def encoder_columns(at: AppTest) -> str:
    spec = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart") if "Encoder" in json.dumps(c.proto.spec))
    return json.dumps(spec, ensure_ascii=False)


def test_the_page_says_what_the_model_read_and_shows_the_model_alone_in_one_click(guarded_model: Path) -> None:
    at = translate(AppTest.from_file(APP, default_timeout=60).run(), "El gato rojo 123.")
    said = beside(at)
    assert said[0].startswith("123 → read as 12: this model met few names in training, mostly Mary, and copies those;")
    assert "123" in at.main.get_by_key("translation").text[0].value  # put back in the translation
    guarded_maps = encoder_columns(at)
    at.button(key="unguard").click().run()  # the model alone: its own translation and maps
    assert not at.exception and at.session_state[GUARD_KEY] is False
    assert beside(at) == ["Name guard off: the model alone reads the text as typed (the guard would read 123 as 12)."]
    assert encoder_columns(at) != guarded_maps
    assert "name guard off" in at.main.get_by_key("provenance").text[0].value and not at.get("warning")
    translate(at, "El perro azul 456.")  # the session's switch holds for the next text
    assert beside(at)[0].startswith("Name guard off") and not at.sidebar.toggle(key=GUARD_KEY).value
    at.button(key="reguard").click().run()
    assert at.sidebar.toggle(key=GUARD_KEY).value and beside(at)[0].startswith("456 → read as 12")


def test_a_sentence_the_guard_gave_up_on_says_so(guarded_model: Path) -> None:
    at = translate(AppTest.from_file(APP, default_timeout=60).run(), "El gato Ana 3.")
    notes = [line for line in beside(at) if "translated as typed" in line]
    assert notes and notes[0].startswith("Name guard off for this sentence: Mary (read for Ana) is")


def test_a_result_says_when_it_was_computed_without_the_guard() -> None:
    from dataclasses import replace

    from lab.page.request import Request, changes

    shown = Request("m", "shipped: m", "Me llamo Ana.", 4, 1.0, 2)
    off = replace(shown, name_guard=False)
    assert shown.settings == "beam search, beam 4, length penalty 1, 2-best" and off.settings.endswith(
        ", name guard off"
    )
    assert changes(shown, off) == ["the name guard"] and changes(off, off) == []


def test_the_model_alone_names_the_swaps_of_the_guarded_translation_never_a_fresh_guess(
    guarded_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caption reads the guarded translation's record (the try the guard used), not ``protect`` again (which
    gives the first try's stand-ins: "Lima as Boston" after "Lima → read as Australia")."""
    at = translate(AppTest.from_file(APP, default_timeout=60).run(), "El gato azul 789.")

    def again(*_: object) -> None:
        raise AssertionError("the page guessed the swaps again")

    monkeypatch.setattr(NameGuard, "protect", again)
    at.button(key="unguard").click().run()
    assert not at.exception
    assert beside(at) == ["Name guard off: the model alone reads the text as typed (the guard would read 789 as 12)."]


def test_a_span_marked_to_keep_is_said_kept_as_you_asked_or_not_kept(guarded_model: Path) -> None:
    at = translate(AppTest.from_file(APP, default_timeout=60).run(), "El gato rojo [[7]].")
    assert (
        at.text_area(key="source").help
        == KEEP_HELP
        == "Wrap words in [[ ]] to keep them as typed (under the name guard)."
    )
    assert beside(at)[0].startswith("7 → read as 12 (kept as you asked): this model met few names")
    assert "7" in at.main.get_by_key("translation").text[0].value
    translate(at, "El gato [[Ana]] 3.")  # the toy model never writes Mary: Ana is lost, and the page says so
    assert "Not kept as typed, as you asked: Ana." in [w.value for w in at.warning]
    translate(at, "El gato [[rojo 3.")
    assert at.error[0].value == "Words to keep as typed: [[ at character 9: expected ]] after the words to keep."
