"""The What if tab on a trained model: source edits and every tool driven through AppTest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import translated
from streamlit.testing.v1 import AppTest

from lab.whatif.attribution import attribute
from lab.whatif.source_edits import edit_and_compare, edited_ids, source_words, word_diff
from lab.whatif.steering import MAX_SOURCE, output_log_probs
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

TEXT = "El gato rojo 3."


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def test_a_source_edit_changes_only_the_chosen_word(tiny: Translator) -> None:
    tok = tiny.tokenizer
    src = tiny.translate(TEXT).src_ids
    words = source_words(tok, src)
    gato = next(w for w in words.editable if words.labels[w] == "gato")
    group = words.groups[gato]
    dropped = edited_ids(tok, src, words, gato, "drop")[0]
    assert dropped == src[: group[0]] + src[group[-1] + 1 :]
    masked = edited_ids(tok, src, words, gato, "mask")[0]
    assert masked == [*src[: group[0]], tok.src.unk_id(), *src[group[-1] + 1 :]]
    replaced = edited_ids(tok, src, words, gato, "replace", "perro")[0]
    assert source_words(tok, replaced).labels[gato] == "perro"
    assert edited_ids(tok, src, words, gato, "replace", "gato")[0] == src  # the same word: the same ids


def test_replacing_a_word_by_itself_changes_nothing_and_dropping_one_moves_attention(tiny: Translator) -> None:
    tok = tiny.tokenizer
    result = tiny.translate(TEXT)
    src, out = result.src_ids, result.best.tokens
    words = source_words(tok, src)
    gato = next(w for w in words.editable if words.labels[w] == "gato")
    same = edit_and_compare(tiny.model, tok, src, out, (gato, "replace", "gato"), DecodeOptions(), -1)
    assert same.tokens == out and np.allclose(same.change, 0.0) and same.forced_log_prob == same.original_log_prob
    assert np.allclose(same.before.sum(-1), 1.0, atol=1e-5)  # word columns summed: rows still sum to 1
    dropped = edit_and_compare(tiny.model, tok, src, out, (gato, "drop", ""), DecodeOptions(), -1)
    assert np.all(dropped.after[:, gato] == 0.0) and np.allclose(dropped.after.sum(-1), 1.0, atol=1e-5)
    assert dropped.forced_log_prob == pytest.approx(float(output_log_probs(tiny.model, dropped.src_ids, out).sum()))


def test_word_diff_keeps_both_outputs_in_order() -> None:
    diff = word_diff("The red cat 3.", "The blue cat 3.")
    assert [w for w, s in diff if s != "added"] == ["The", "red", "cat", "3."]
    assert [w for w, s in diff if s != "removed"] == ["The", "blue", "cat", "3."]
    assert ("red", "removed") in diff and ("blue", "added") in diff


def test_integrated_gradients_are_complete_on_the_shipped_model() -> None:
    """64 steps (the page's default): the gap stays within 5% of f(input) − f(baseline) on a real sentence."""
    translator = Translator.load(DEFAULT_MODEL)
    result = translator.translate("El gato negro duerme en la casa de mi abuela.")
    out = result.best.tokens
    for step in (0, len(out) // 2):
        found = attribute(translator.model, result.src_ids, out, step, steps=64)
        assert abs(found.completeness_gap) <= 0.05 * abs(found.value - found.baseline_value) + 1e-3


def whatif_tab() -> None:
    """The What if tab alone (as app.py lays it out), on LAB_MODEL_DIR's model: "El gato rojo 3." with WHATIF_BEAM."""
    import os
    from pathlib import Path
    from types import SimpleNamespace

    from lab.attention.translate_with_maps import maps_of
    from lab.page.direction import languages
    from lab.page.request import Request
    from translate.translator import DecodeOptions, Translator
    from views.whatif_tab import show_whatif

    directory = os.environ["LAB_MODEL_DIR"]
    beam = int(os.environ.get("WHATIF_BEAM", "1"))
    translator = Translator.load(Path(directory))
    result = translator.translate("El gato rojo 3.", DecodeOptions(beam_size=beam))
    tokens = result.best.tokens
    maps = maps_of(translator, result.src_ids, tokens)
    request = Request(directory, "tiny", "El gato rojo 3.", beam, 1.0, 1)
    ctx = SimpleNamespace(
        translator=translator,
        request=request,
        sentence=result,
        candidate=result.best,
        maps=maps,
        langs=languages(Path(directory)),
        cross_layer=0,
    )
    show_whatif(ctx)  # type: ignore[arg-type]


@pytest.fixture(params=[1, 3], ids=["greedy", "beam"])
def page(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path) -> AppTest:
    """The What if tab on the tiny model, the page's search greedy or beam."""
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir))
    monkeypatch.setenv("WHATIF_BEAM", str(request.param))
    at = AppTest.from_function(whatif_tab, default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_app_opens_the_what_if_tab(model_env: Path) -> None:
    at = translated(TEXT, "What if", timeout=120)
    at.radio(key="whatif_edit").set_value("drop").run()
    assert not at.exception, [e.message for e in at.exception]
    assert shown(at, "whatif_edited_output") is not None


def chart_titles(at: AppTest) -> str:
    return json.dumps([json.loads(c.proto.spec).get("title") for c in at.get("vega_lite_chart")])


def shown(at: AppTest, key: str) -> str:
    return at.main.get_by_key(key).code[0].value


def test_the_what_if_tab_edits_the_source(page: AppTest) -> None:
    at = page
    assert at.radio(key="whatif_tool").value == "Change the Spanish"
    at.radio(key="whatif_edit").set_value("drop").run()
    assert not at.exception, [e.message for e in at.exception]
    assert shown(at, "whatif_edited_output") is not None and "Change in cross-attention" in chart_titles(at)
    headings = [m.value for m in at.main.markdown]  # the words are the ids the model read: under the guard, not typed
    assert "**Spanish, as the model read it**" in headings and "**Spanish, as typed**" not in headings


def test_a_replacement_too_long_for_the_tools_is_refused_with_the_limit_named(page: AppTest) -> None:
    at = page
    at.radio(key="whatif_tool").set_value("Change the Spanish").run()
    at.radio(key="whatif_edit").set_value("replace").run()
    at.text_input(key="whatif_new_word").set_value("gato " * MAX_SOURCE).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(f"the what-if tools take up to {MAX_SOURCE}" in w.value for w in at.warning)


@pytest.mark.parametrize(
    ("tool", "chart"),
    [
        ("Switch heads off", "Which heads matter"),
        ("Attribution", "source"),
    ],
)
def test_each_what_if_tool_draws_its_chart(page: AppTest, tool: str, chart: str) -> None:
    at = page
    at.radio(key="whatif_tool").set_value(tool).run()
    assert not at.exception, [e.message for e in at.exception]
    assert chart in chart_titles(at)


def test_heads_off_shows_its_result(page: AppTest) -> None:
    at = page
    at.radio(key="whatif_tool").set_value("Switch heads off").run()
    heads = at.multiselect(key="whatif_heads")
    heads.set_value(heads.options[:2]).run()
    assert not at.exception, [e.message for e in at.exception]
    assert shown(at, "whatif_ablated_output") is not None


def test_every_tool_runs_on_the_shipped_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(DEFAULT_MODEL))
    monkeypatch.setenv("WHATIF_BEAM", "1")
    at = AppTest.from_function(whatif_tab, default_timeout=180).run()
    at.radio(key="whatif_edit").set_value("replace").run()
    at.text_input(key="whatif_new_word").set_value("perro").run()
    assert "dog" in shown(at, "whatif_edited_output")
    for tool in ("Switch heads off", "Attribution"):
        at.radio(key="whatif_tool").set_value(tool).run()
        assert not at.exception, (tool, [e.message for e in at.exception])
