"""The translate page driven headlessly with Streamlit's AppTest, against the tiny fixture model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from lab.explain import Explanation
from lab.maps import KIND_TITLES
from model.translate import Translator

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path, tmp_path: Path) -> Path:
    """Point the app at the tiny model (as the shipped default) and an empty runs folder."""
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    return tiny_model_dir


def start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    return at


def translate(at: AppTest, text: str) -> AppTest:
    at.text_area(key="source").set_value(text)
    at.button(key="translate").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def title_of(spec: dict) -> str:
    """A chart's title and subtitle as one line: "Cross-attention — layer 1, mean of heads"."""
    title = spec.get("title", "")
    if isinstance(title, dict):
        return " — ".join(filter(None, [title.get("text", ""), title.get("subtitle", "")]))
    return str(title)


def titled(at: AppTest, prefix: str) -> list[dict]:
    return [s for s in specs(at) if title_of(s).startswith(prefix)]


def view(at: AppTest, kind: str) -> dict:
    """The one main-view chart of ``kind`` (its title is "<kind title> — layer …")."""
    (spec,) = titled(at, f"{KIND_TITLES[kind]} — layer")
    return spec


def output(at: AppTest) -> str:
    return at.code[0].value


def test_translate_shows_the_translation_and_the_three_views_side_by_side(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    assert output(at).strip()
    views = [view(at, kind) for kind in ("encoder", "decoder", "cross")]
    decoder = views[1]["encoding"]
    assert decoder["x"]["sort"][0] == "<s>" and "<s>" not in decoder["y"]["sort"]  # rows predict, columns are inputs
    assert decoder["y"]["sort"][-1] == "</s>"
    assert any("not an explanation" in c.value for c in at.caption)
    state = at.session_state.values()  # the model is shared through the resource cache, never per session
    assert not any(isinstance(v, (Translator, torch.nn.Module, Explanation)) for v in state)


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_input_gets_a_friendly_prompt(model_env: Path, text: str) -> None:
    at = translate(start(), text)
    assert any("type a Spanish sentence" in info.value for info in at.info)
    assert not specs(at) and not at.code


def test_too_long_input_is_translated_up_to_the_limit_with_a_warning(model_env: Path) -> None:
    at = translate(start(), " ".join(["El perro azul 7."] * 80))
    assert any("longer than this model accepts" in w.value for w in at.warning)
    assert output(at).strip() and view(at, "cross")


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script> <b>hola</b>",
        "**negrita** # título [x](http://e.com)",
        "hola 😀🚀 ∑ 中文",
        "Hello world",
        "😀",
        "\u200b",  # zero-width space: not whitespace to Python, no subwords to the tokenizer
    ],
)
def test_markup_emoji_and_foreign_text_are_shown_as_plain_text(model_env: Path, text: str) -> None:
    at = translate(start(), text)
    assert at.code and not at.get("html")
    for md in at.markdown:  # no user text ever goes through markdown
        assert "<script>" not in md.value and "negrita" not in md.value
    assert view(at, "encoder")


def test_layer_head_and_word_controls_change_the_views(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    assert "mean of heads" in title_of(view(at, "cross"))
    at.selectbox(key="head").select(1).run()
    assert not at.exception
    assert "head 2" in title_of(view(at, "cross"))
    subword_cols = view(at, "cross")["encoding"]["x"]["sort"]
    at.toggle(key="words").set_value(True).run()
    assert not at.exception
    word_cols = view(at, "cross")["encoding"]["x"]["sort"]
    assert len(word_cols) < len(subword_cols) and not any("▁" in c for c in word_cols)
    at.selectbox(key="dec_layer").select(0).run()
    at.selectbox(key="enc_layer").select(0).run()
    assert not at.exception and "layer 1" in title_of(view(at, "encoder"))


def test_beam_search_lists_hypotheses_and_shows_the_chosen_ones_attention(model_env: Path) -> None:
    at = start()
    at.radio(key="search").set_value("beam search").run()
    at.slider(key="beam_size").set_value(4).run()
    at.slider(key="n_best").set_value(3).run()
    at = translate(at, "El perro azul 7.")
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 3
    first_rows = view(at, "cross")["encoding"]["y"]["sort"]
    at.selectbox(key="hypothesis").select(2).run()
    assert not at.exception
    third_rows = view(at, "cross")["encoding"]["y"]["sort"]
    assert third_rows[-1] == "</s>" and third_rows != first_rows  # maps of the chosen hypothesis, ending at its EOS


@pytest.mark.parametrize(
    ("tab", "expected"),
    [
        ("All heads", "all heads"),
        ("Alignment", "Alignment"),
        ("Step by step", "Masked self-attention at this step"),
        ("Head summary", "what each head does"),
        ("Positional encoding", "Positional encoding"),
    ],
)
def test_each_tab_draws_its_chart(model_env: Path, tab: str, expected: str) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = tab
    at.run()
    assert not at.exception
    assert any(expected in title_of(s) for s in specs(at))


def test_alignment_tab_says_what_it_excludes_and_offers_both_readings(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Alignment"
    at.run()
    assert any("</s>" in c.value and "Left out" in c.value for c in at.caption)
    assert any("not explanation" in info.value for info in at.info)
    table = at.dataframe[-1].value
    assert list(table.columns) == ["English", "Spanish", "weight"] and "</s>" not in set(table["Spanish"])
    at.radio(key="reading").set_value("shift").run()
    assert not at.exception and at.dataframe


def test_step_slider_and_head_summary_choice(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Step by step"
    at.run()
    at.slider(key="step").set_value(3).run()
    assert not at.exception
    generated = at.code[1].value.split()
    assert generated[0] == "<s>" and len(generated) == 3
    at.session_state["view"] = "Head summary"
    at.run()
    at.selectbox(key="summary_head").select((0, 1)).run()
    assert not at.exception and titled(at, f"{KIND_TITLES['encoder']} — layer 1, head 2")


def test_download_tab_offers_json_html_and_png(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Download"
    at.run()
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Attention maps (JSON)", "Charts (HTML)", "Charts (PNG)"]


def test_missing_model_gives_a_friendly_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(tmp_path / "checkpoints" / "es-en"))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = start()
    assert any("not trained yet" in w.value for w in at.warning)
    assert at.button(key="translate").disabled


def test_finished_runs_appear_in_the_model_picker(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir.parent / "not-there"))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tiny_model_dir.parent))
    at = start()
    picker = at.selectbox(key="model")
    assert len(picker.options) == 2 and picker.value.path == tiny_model_dir
    translate(at, "El gato rojo 3.")
    assert output(at).strip()


def test_picking_an_example_fills_the_text_box(model_env: Path) -> None:
    at = start()
    at.selectbox(key="example").select_index(1).run()
    assert at.text_area(key="source").value == at.selectbox(key="example").value


def test_two_sessions_see_their_own_results(model_env: Path) -> None:
    first, second = start(), start()
    translate(first, "El gato rojo 3.")
    translate(second, "El perro azul 7.")
    first.run()  # the other session's translation must not leak in
    assert output(first) != output(second)
    assert view(first, "encoder")["encoding"]["y"]["sort"] != view(second, "encoder")["encoding"]["y"]["sort"]
    assert first.text_area(key="source").value == "El gato rojo 3."
