"""The translate page driven headlessly with Streamlit's AppTest, against the tiny fixture model."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import streamlit as st
import torch
from conftest import APP, alone, raw_words, translate, translated
from streamlit.testing.v1 import AppTest

from data.case_markup import MARK
from data.tokenizer import JOINT_FILE
from lab.attention.sentence_maps import KIND_TITLES
from lab.attention.translate_with_maps import EMPTY, TextTranslation, maps_of
from lab.page.examples import EXAMPLES, EXAMPLES_EN_ES
from lab.page.model_choices import MODEL_FILES, record_default
from model.attention_maps import KINDS
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from views.maps import DISCLAIMER, HEAD_KEYS, LAYER_KEYS, ROOM_FOR_MAPS
from views.word_shading import PLAIN
from viz.arithmetic import weight_text
from viz.heatmap import MAX_AXIS_LABELS
from workshop.bench.app_latency import long_input


def start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
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
    """The English translation shown."""
    return at.main.get_by_key("translation").text[0].value


def shown_source(at: AppTest) -> str:
    """The Spanish source shown with the result."""
    return at.main.get_by_key("provenance").text[1].value


def stale(at: AppTest) -> str:
    """The out-of-date warning ("" when the result matches the page)."""
    try:
        return at.main.get_by_key("stale").warning[0].value
    except KeyError:
        return ""


def chart_bytes(at: AppTest) -> int:
    """Bytes of every chart on the page (spec and Arrow data), as the browser receives them."""
    return sum(chart.proto.ByteSize() for chart in at.get("vega_lite_chart"))


def test_translate_shows_the_translation_and_the_three_views_side_by_side(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    assert output(at).strip()
    views = [view(at, kind) for kind in ("encoder", "decoder", "cross")]
    decoder = views[1]["encoding"]
    assert decoder["x"]["sort"][0] == "<s>"  # columns are the decoder inputs, <s> first
    rows = decoder["y"]["sort"]  # each row names its input and its prediction: "<s> → ▁The"
    assert rows[0].startswith("<s> → ") and rows[-1].endswith(" → </s>") and all(" → " in r for r in rows)
    assert [r.split(" → ")[0] for r in rows[1:]] == [r.split(" → ")[1] for r in rows[:-1]]  # a prediction, then input
    assert any("not an explanation" in c.value for c in at.caption)
    state = at.session_state.values()  # the model is shared through the resource cache, never per session
    assert not any(isinstance(v, (Translator, torch.nn.Module, TextTranslation)) for v in state)


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_input_gets_a_friendly_prompt(model_env: Path, text: str) -> None:
    at = translate(start(), text)
    assert any("type a Spanish sentence" in info.value for info in at.info)
    assert not specs(at) and not at.text


def test_a_long_input_is_translated_sentence_by_sentence_with_a_sentence_picker(model_env: Path) -> None:
    nouns, colours = ["gato", "perro", "libro", "coche"], ["rojo", "azul", "verde"]
    said = [f"El {nouns[i % 4]} {colours[i % 3]} {i % 20}." for i in range(40)]
    at = translate(start(), " ".join(said))  # far more than the tiny model's 64 positions
    assert not any("longer than this model accepts" in w.value for w in at.warning)  # nothing was cut
    picker = at.selectbox(key="sentence")
    assert len(picker.options) == len(said)
    table = at.main.get_by_key("sentences").dataframe[0].value
    assert list(table["Spanish"]) == said and all(table["English"].str.strip())
    assert output(at) == " ".join(e.strip() for e in table["English"])  # the whole translation, in order
    box = at.main.get_by_key("translation")  # every word of it shaded, the words to click (one piece's) under it
    assert box.get("html") and not box.get("button_group") and [b for b in at.button_group if b.key.startswith("word_")]
    first_rows = view(at, "encoder")["encoding"]["y"]["sort"]
    picker.select_index(1).run()
    assert not at.exception
    assert view(at, "encoder")["encoding"]["y"]["sort"] != first_rows  # the maps of the chosen sentence
    assert "azul" in "".join(view(at, "encoder")["encoding"]["y"]["sort"])


def test_a_5000_character_input_sends_at_most_5_mb_of_charts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The shipped model (any version) on the longest text the box takes: bounded charts, all heads only on demand."""
    monkeypatch.setenv("LAB_MODEL_DIR", str(DEFAULT_MODEL))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = start()
    for punctuation in (True, False):  # sentences; one run of words with nothing to split at (the worst case)
        text = long_input(5000, punctuation)
        at = translate(at, text)
        sizes = {"main view": chart_bytes(at)}
        assert not titled(at, "Encoder self-attention: all heads")  # the grid is not open by default
        for spec in [view(at, kind) for kind in ("encoder", "decoder", "cross")]:
            for axis in ("x", "y"):
                assert (
                    len(spec["encoding"][axis]["axis"].get("values", spec["encoding"][axis]["sort"])) <= MAX_AXIS_LABELS
                )
        longest = int(at.main.get_by_key("sentences").dataframe[0].value["Spanish"].str.len().idxmax())
        for sentence in sorted({0, longest}):
            at.selectbox(key="sentence").select_index(sentence).run()
            for tab in ("All heads", "Step by step", "Positional encoding", "Alignment"):
                at.session_state["view"] = tab
                at.run()
                assert not at.exception
                sizes[f"{tab}, sentence {sentence + 1}"] = chart_bytes(at)
        print(f"\n{len(text):,}-character input, punctuation={punctuation}: chart bytes per page run {sizes}")
        assert max(sizes.values()) <= 5_000_000


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
    bodies = [h.proto.body for h in at.get("html") if h.proto.body not in (ROOM_FOR_MAPS, PLAIN)]
    shades = [b for b in bodies if b.startswith(("<style>.st-key-word_", "<style>body:has("))]  # CSS only
    assert at.main.get_by_key("translation").text  # st.text: no highlighter, no markdown, no HTML
    assert not [css for css in shades if any(word in css for word in ("script", "hola", "negrita", "Hello"))]
    lines = [b for b in bodies if b not in shades]  # the source line under the box: the text as typed, escaped
    assert all(b.startswith('<div class="source-words">') for b in lines), lines
    assert not [b for b in lines if "<script>" in b or "<b>hola" in b]
    for md in at.markdown:  # no user text ever goes through markdown
        assert "<script>" not in md.value and "negrita" not in md.value
    assert view(at, "encoder")


def test_characters_the_model_cannot_read_are_named_in_a_notice(model_env: Path) -> None:
    at = translate(start(), "El gato 😀 rojo.")
    (notice,) = [w.value for w in at.warning if "Left out" in w.value]
    assert "GRINNING FACE" in notice
    assert "<unk>" not in view(at, "cross")["encoding"]["x"]["sort"]  # the model read the rest, and no <unk>
    assert not [w for w in translate(at, "El gato rojo.").warning if "Left out" in w.value]


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
    assert len(at.main.get_by_key("nbest").dataframe[0].value) == 3
    first_rows = view(at, "cross")["encoding"]["y"]["sort"]
    at.selectbox(key="hypothesis").select(2).run()
    assert not at.exception
    third_rows = view(at, "cross")["encoding"]["y"]["sort"]
    assert third_rows[-1].endswith("→ </s>") and third_rows != first_rows  # the chosen hypothesis's maps, to its EOS


def test_the_all_heads_grid_is_drawn_only_when_its_tab_is_opened(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    assert at.pills(key="view").value is None  # no view under the maps is open at first
    assert not [s for s in specs(at) if "all heads" in title_of(s)]
    at.session_state["view"] = "All heads"
    at.run()
    assert [s for s in specs(at) if "all heads" in title_of(s)]


def test_decoder_tooltips_name_the_query_input_and_the_predicted_token(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    for kind in ("decoder", "cross"):
        titles = {t["field"]: t["title"] for t in view(at, kind)["encoding"]["tooltip"]}
        assert titles["row_label"] == "query: input → predicts" and titles["row_input"] == "computed at decoder input"
    assert {t["field"]: t["title"] for t in view(at, "encoder")["encoding"]["tooltip"]}["row_label"] == "query token"


@pytest.mark.parametrize(
    ("tab", "expected"),
    [
        ("All heads", "all heads"),
        ("Alignment", "Alignment"),
        ("Step by step", "Masked self-attention at this step"),
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
    said = [e.value for e in [*at.caption, *at.info] if "not an explanation" in e.value or "not explanation" in e.value]
    assert said == [DISCLAIMER]  # once on the page, under the maps, not again in the tab
    table = at.table[-1].value
    assert list(table.columns) == ["English", "Spanish", "weight"] and "</s>" not in set(table["Spanish"])
    at.radio(key="reading").set_value("shift").run()
    assert not at.exception and at.table


def test_step_slider_shows_the_prefix_so_far(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Step by step"
    at.run()
    at.slider(key="step").set_value(3).run()
    assert not at.exception
    generated = at.main.get_by_key("step_generated").code[0].value.split()
    assert generated[0] == "<s>" and len(generated) == 3


def test_missing_model_gives_a_friendly_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(tmp_path / "checkpoints" / "es-en"))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    alone(monkeypatch, tmp_path)
    at = start()
    assert any("not trained yet" in w.value for w in at.warning)
    assert at.button(key="translate").disabled


def test_finished_runs_appear_in_the_model_picker(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir.parent / "not-there"))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tiny_model_dir.parent))
    alone(monkeypatch, tiny_model_dir.parent)
    at = start()
    picker = at.selectbox(key="model")
    assert len(picker.options) == 2 and picker.value.path == tiny_model_dir
    translate(at, "El gato rojo 3.")
    assert output(at).strip()


def test_picking_an_example_fills_the_text_box_and_other_text_makes_the_picker_forget_it(model_env: Path) -> None:
    at = start()
    at.selectbox(key="example").select_index(1).run()
    assert at.text_area(key="source").value == at.selectbox(key="example").value
    at.text_area(key="source").set_value("El perro azul 7.").run()
    assert at.selectbox(key="example").value is None  # it no longer names a sentence the box does not hold


def test_the_first_screen_opens_on_a_worked_example_with_its_maps(model_env: Path) -> None:
    at = start()
    assert at.text_area(key="source").value == EXAMPLES[0].source and output(at).strip()
    assert {KIND_TITLES[k] for k in KINDS} <= {title_of(s).split(" — ")[0] for s in specs(at)}
    assert any(c.value.startswith("**How to read a map.**") for c in at.caption)


def test_a_picked_example_is_translated_in_its_hints_view(model_env: Path) -> None:
    at = start()
    at.selectbox(key="example").select_index(1).run()
    example = EXAMPLES[1]
    assert output(at) == translate(start(), example.source).main.get_by_key("translation").text[0].value
    head = -1 if example.claim.head is None else example.claim.head  # (the tiny model has fewer layers)
    assert at.session_state[HEAD_KEYS[example.claim.kind]] == head
    assert at.session_state["words"] == example.claim.words


def test_two_sessions_see_their_own_results(model_env: Path) -> None:
    first, second = start(), start()
    translate(first, "El gato rojo 3.")
    translate(second, "El perro azul 7.")
    first.run()  # the other session's translation must not leak in
    assert output(first) != output(second)
    assert view(first, "encoder")["encoding"]["y"]["sort"] != view(second, "encoder")["encoding"]["y"]["sort"]
    assert first.text_area(key="source").value == "El gato rojo 3."


def copy_model(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in (*MODEL_FILES, JOINT_FILE):
        shutil.copy(source / name, target / name)
    return target


def test_a_result_shows_its_source_and_model_and_is_marked_when_the_page_changes(
    model_env: Path, tmp_path: Path
) -> None:
    copy_model(model_env, tmp_path / "runs" / "other")
    at = start()
    assert at.selectbox(key="model").options == ["shipped: tiny", "run: other"]
    at = translate(at, "El gato rojo 3.")
    provenance = at.main.get_by_key("provenance").text[0].value
    assert "shipped: tiny" in provenance and "greedy" in provenance
    assert shown_source(at) == "El gato rojo 3." and stale(at) == ""
    at.text_area(key="source").set_value("El perro azul 7.").run()
    assert "the text" in stale(at) and shown_source(at) == "El gato rojo 3."  # the old result, marked
    at.text_area(key="source").set_value("El gato rojo 3.").run()
    assert stale(at) == ""
    at.selectbox(key="model").select_index(1).run()
    assert "the model" in stale(at) and "shipped: tiny" in at.main.get_by_key("provenance").text[0].value
    at.button(key="translate").click().run()
    assert stale(at) == "" and "run: other" in at.main.get_by_key("provenance").text[0].value
    at.radio(key="search").set_value("beam search").run()
    assert "the decoding settings" in stale(at)


def test_an_output_cut_at_the_length_limit_is_reported_and_an_empty_one_is_shown(
    model_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    st.cache_data.clear()
    # An output limit of one token: EOS is forced at once, so the output is empty and cut.
    monkeypatch.setattr(
        "translate.translator.DecodeOptions", functools.partial(DecodeOptions, max_len_a=0.0, max_len_b=1)
    )
    at = translate(start(), "El coche verde 12.")
    assert output(at) == EMPTY  # not a blank box
    assert any("length limit" in w.value and "had not finished" in w.value for w in at.warning)
    assert view(at, "cross")["encoding"]["y"]["sort"] == ["<s> → </s>"]
    st.cache_data.clear()


# --- issue 13: the lab teaches (follow a token, arithmetic, steps with probabilities, readable views, languages) ---


def chart_data(at: AppTest, title_prefix: str) -> pd.DataFrame:
    """The data of the one chart whose title starts with ``title_prefix`` (sent to the browser as Arrow)."""
    (chart,) = [c for c in at.get("vega_lite_chart") if title_of(json.loads(c.proto.spec)).startswith(title_prefix)]
    (dataset,) = chart.proto.datasets
    return pa.ipc.open_stream(dataset.data.data).read_all().to_pandas()


def lit_rows_and_cols(at: AppTest, kind: str) -> tuple[set[int], set[int]]:
    """(rows entirely lit, columns entirely lit) of the main view of ``kind``; empty when nothing is lit."""
    data = chart_data(at, f"{KIND_TITLES[kind]} — layer")
    if "focus" not in data.columns:
        return set(), set()
    rows = {int(r) for r, g in data.groupby("row") if g["focus"].all()}
    cols = {int(c) for c, g in data.groupby("col") if g["focus"].all()}
    return rows, cols


def test_following_a_token_lights_its_rows_and_columns_in_all_three_views(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    picker = at.selectbox(key="follow")
    assert picker.value is None and all(lit_rows_and_cols(at, kind) == (set(), set()) for kind in KIND_TITLES)
    n_src = sum(1 for o in picker.options if "Spanish" in str(o))
    picker.select_index(2).run()  # the second Spanish token
    assert not at.exception
    assert lit_rows_and_cols(at, "encoder") == ({1}, {1})
    assert lit_rows_and_cols(at, "cross")[1] == {1} and lit_rows_and_cols(at, "decoder") == (set(), set())
    assert "opacity" in view(at, "encoder")["encoding"] and "opacity" not in view(at, "decoder")["encoding"]
    at.selectbox(key="follow").select_index(1 + n_src + 1).run()  # the second English token
    assert lit_rows_and_cols(at, "decoder") == ({1}, {2})  # the row predicting it; the column where it is input
    assert lit_rows_and_cols(at, "cross")[0] == {1} and lit_rows_and_cols(at, "encoder") == (set(), set())
    at.session_state["view"] = "All heads"
    at.run()
    grid = chart_data(at, "Encoder self-attention: all heads")
    assert "focus" not in grid.columns  # an English token is no part of the encoder
    at.radio(key="grid_kind").set_value("cross").run()
    grid = chart_data(at, "Cross-attention: all heads")
    assert grid.loc[grid.row == 1, "focus"].all() and not grid.loc[grid.row != 1, "focus"].any()
    (spec,) = titled(at, "Cross-attention: all heads")
    assert [p["name"] for p in spec["params"]] == ["panel_pick"]  # a click on a panel chooses layer and head
    at = translate(at, "El perro azul 7.")
    assert at.selectbox(key="follow").value is None  # a new sentence: nothing followed


def test_maps_are_clickable_and_share_one_colour_scale_unless_told_otherwise(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    for kind in KIND_TITLES:
        assert [p["name"] for p in view(at, kind)["params"]] == ["cell_pick"]
        assert view(at, kind)["encoding"]["color"]["scale"]["domain"] == [0, 1]  # one scale side by side
    assert all("max" not in title_of(view(at, kind)) for kind in KIND_TITLES)
    at.toggle(key="shared_scale").set_value(False).run()
    assert not at.exception
    assert all("domain" not in view(at, kind)["encoding"]["color"]["scale"] for kind in KIND_TITLES)
    for kind, prefix in KIND_TITLES.items():  # a map on its own scale prints its largest weight, never rounded up
        printed = float(title_of(view(at, kind)).split("own scale, max ")[1])
        largest = float(chart_data(at, f"{prefix} — layer")["weight"].max())
        assert largest - 0.001 <= printed <= largest


def test_every_view_names_query_and_key_and_the_tokens_are_explained(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    for kind in KIND_TITLES:
        encoding = view(at, kind)["encoding"]
        assert encoding["y"]["title"].startswith("query") and encoding["x"]["title"].startswith("key")
    assert "predicts English" in view(at, "decoder")["encoding"]["y"]["title"]
    (legend,) = [e for e in at.expander if "Reading the tokens" in e.label]
    assert all(token in legend.markdown[0].value for token in ("`▁`", "`<s>`", "`</s>`", "`<unk>`"))


def test_the_arithmetic_tab_recomputes_the_shown_row(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Arithmetic of a weight"
    at.run()
    assert not at.exception and at.get("latex")
    table = at.main.get_by_key("arith_table").dataframe[0].value
    assert list(table.columns) == ["position", "key", "q·k", "score", "mask M", "e^(s − max s)", "weight"]
    assert table["weight"].astype(float).sum() == pytest.approx(1.0, abs=1e-2)  # printed to a few decimals
    translator = Translator.load(model_env)
    result = translator.translate("El gato rojo 3.")
    maps = maps_of(translator, result.src_ids, result.best.tokens)
    layer = maps.n_layers("encoder") - 1
    row = maps.encoder[layer, 0, 0]  # the shown map's row, printed so that no weight below 1 reads as 1
    assert list(table["weight"]) == [weight_text(w) for w in row] and "1.000" not in set(table["weight"])
    np.testing.assert_allclose(table["weight"].astype(float), row, atol=5e-4)
    at.selectbox(key="arith_kind").set_value("decoder").run()
    at.selectbox(key="arith_query_decoder").set_value(1).run()
    assert not at.exception
    table = at.main.get_by_key("arith_table").dataframe[0].value
    assert (table["weight"][2:] == "0").all() and (table["mask M"][2:] == "−∞").all()  # exactly 0
    assert "exactly 0" in at.main.get_by_key("why_zero").info[0].value
    assert titled(at, "1. Scores") and titled(at, "2. Softmax")


def test_steps_show_the_choice_and_its_probability(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Step by step"
    at.run()
    assert titled(at, "Step 1: the top")
    assert any(c.value.startswith("Chosen:") and "probability" in c.value for c in at.caption)
    data = chart_data(at, "Masked self-attention at this step")
    assert data.loc[data.row == 0, "focus"].all() and not data.loc[data.row != 0, "focus"].any()
    at.button(key="step_next").click().run()
    assert at.slider(key="step").value == 2 and titled(at, "Step 2: the top")
    at.button(key="step_prev").click().run()
    assert at.slider(key="step").value == 1


def test_beam_search_steps_list_the_hypotheses_alive(model_env: Path) -> None:
    at = start()
    at.radio(key="search").set_value("beam search").run()
    at = translate(at, "El perro azul 7.")
    at.session_state["view"] = "Step by step"
    at.run()
    table = at.main.get_by_key("beam_table").dataframe[0].value
    assert len(table) >= 1 and str(table.iloc[0, 0]).startswith("alive")


def test_input_that_is_not_spanish_is_flagged_and_examples_say_what_to_look_for(model_env: Path) -> None:
    at = translate(start(), "12345 !!!")
    assert any("translates Spanish" in w.value for w in at.main.get_by_key("input_check").warning)
    at = start()
    at.selectbox(key="example").select_index(0).run()
    at.button(key="translate").click().run()
    assert not at.exception  # the tiny model does not translate the example as accepted: no hint (test_examples.py)
    assert at.main.get_by_key("no_hint").caption[0].value.startswith("No hint for this example")


def test_language_names_come_from_the_model_directory(
    model_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = copy_model(model_env, tmp_path / "pt-en")
    config = json.loads((model_env / "train_config.json").read_text())
    config["data"].update(src_lang="pt", tgt_lang="en")
    (other / "train_config.json").write_text(json.dumps(config))
    monkeypatch.setenv("LAB_MODEL_DIR", str(other))
    at = translate(start(), "O gato vermelho 3.")
    assert at.title[0].value.startswith("Portuguese → English")
    assert at.text_area(key="source").label == "Portuguese sentence"
    views = [view(at, kind) for kind in KIND_TITLES]
    words = [c.value for c in at.caption] + [at.title[0].value] + [json.dumps(s) for s in views]
    assert not [w for w in words if "Spanish" in w]
    assert "Portuguese" in view(at, "cross")["encoding"]["x"]["title"]
    at.session_state["view"] = "Alignment"
    at.run()
    (alignment,) = titled(at, "Alignment")
    assert "Portuguese" in json.dumps(alignment) and "Spanish" not in json.dumps(alignment)
    assert "Spanish" not in " ".join(c.value for c in at.caption)


def test_a_model_from_english_offers_the_english_examples_and_opens_on_the_first(
    model_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = copy_model(model_env, tmp_path / "en-es")
    config = json.loads((model_env / "train_config.json").read_text())
    config["data"].update(src_lang="es", tgt_lang="en", reverse=True)  # a Spanish–English corpus, trained en → es
    (other / "train_config.json").write_text(json.dumps(config))
    monkeypatch.setenv("LAB_MODEL_DIR", str(other))
    at = start()
    assert at.title[0].value.startswith("English → Spanish")
    box = at.text_area(key="source")
    assert box.label == "English sentence" and "English" in box.placeholder and "español" not in box.placeholder
    assert at.sidebar.selectbox(key="example").options == [e.source for e in EXAMPLES_EN_ES]
    assert box.value == EXAMPLES_EN_ES[0].source  # the worked example of its own direction


def test_picking_a_model_of_another_source_language_clears_the_text_and_its_result(
    model_env: Path, tmp_path: Path
) -> None:
    other = copy_model(model_env, tmp_path / "runs" / "en-es")
    config = json.loads((model_env / "train_config.json").read_text())
    config["data"].update(src_lang="es", tgt_lang="en", reverse=True)
    (other / "train_config.json").write_text(json.dumps(config))
    at = translate(start(), "El gato rojo 3.")
    picker = at.selectbox(key="model")
    picker.select_index(picker.options.index("run: en-es")).run()
    assert not at.exception and at.title[0].value.startswith("English → Spanish")
    assert at.text_area(key="source").value == "" and "request" not in at.session_state
    assert any("Type an English sentence" in i.value for i in at.info)


def test_positional_encoding_as_curves(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Positional encoding"
    at.run()
    assert titled(at, "Positional encoding, one curve per dimension")
    at.multiselect(key="pe_dims").set_value([0, 1]).run()
    assert not at.exception
    assert sorted(chart_data(at, "Positional encoding, one curve per dimension")["dimension"].unique()) == [
        "dim 0",
        "dim 1",
    ]


def test_a_model_with_case_markup_shows_the_mark_explains_it_and_gives_words_their_capitals(
    monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path, toy_corpus: Path, tmp_path: Path
) -> None:
    from training.train import main

    marked = tmp_path / "marked"
    args = ["--config", "configs/tiny.toml", "--corpus", str(toy_corpus), "--out", str(marked)]
    assert main([*args, "--init-from", str(tiny_model_dir), "--data.case_markup=true", "--optim.max_steps=3"]) == 0
    monkeypatch.setenv("LAB_MODEL_DIR", str(marked))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    at = translate(start(), "El gato rojo 3.")
    assert MARK in view(at, "cross")["encoding"]["x"]["sort"]  # the pieces the model reads, mark included
    (legend,) = [e for e in at.expander if e.label.startswith("Reading the tokens")]
    assert MARK in legend.label and "case markup" in legend.markdown[0].value
    at.toggle(key="words").set_value(True).run()
    words = view(at, "cross")["encoding"]["x"]["sort"]
    assert words[0] == "El" and not any(MARK in w for w in words)
    at = translate(at, "3 gatos rojos.")  # no capital (its first word is a number), no mark: the legend leaves it out
    (legend,) = [e for e in at.expander if e.label.startswith("Reading the tokens")]
    assert MARK not in legend.label


def test_the_spanish_text_survives_a_visit_to_the_train_page(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.switch_page("pages/1_Train.py").run()
    assert not at.exception and at.title[0].value == "Train on your own corpus"
    at.switch_page("app.py").run()
    assert not at.exception
    assert at.text_area(key="source").value == "El gato rojo 3."
    assert not any("out of date" in w.value for w in at.warning)  # the result still matches the text


def test_each_kind_has_its_own_layer_and_head(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    assert all("mean of heads" in title_of(view(at, kind)) for kind in KIND_TITLES)  # the default
    for key, kind in (("enc_head", "encoder"), ("dec_head", "decoder"), ("head", "cross")):
        before = {k: title_of(view(at, k)) for k in KIND_TITLES}
        at.selectbox(key=key).select(1).run()
        assert not at.exception
        after = {k: title_of(view(at, k)) for k in KIND_TITLES}
        assert "head 2" in after[kind] and all(after[k] == before[k] for k in KIND_TITLES if k != kind)
    decoder = title_of(view(at, "decoder"))
    at.selectbox(key="cross_layer").select(0).run()
    assert "layer 1" in title_of(view(at, "cross")) and title_of(view(at, "decoder")) == decoder


def test_the_architecture_tab_lights_the_block_of_the_map_shown(model_env: Path) -> None:
    at = translate(start(), "El gato rojo 3.")
    at.session_state["view"] = "Architecture"
    at.run()
    for kind in ("cross", "encoder"):
        at.radio(key="architecture_kind").set_value(kind).run()
        assert not at.exception
        layer = at.selectbox(key=LAYER_KEYS[kind]).value
        (spec,) = [s for s in specs(at) if "encoder +" in title_of(s)]
        assert f"lit: {KIND_TITLES[kind]}, layer {layer + 1} " in spec["title"]["subtitle"]


def test_the_run_the_train_pages_gate_made_the_default_is_picked_first(model_env: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(model_env, runs / "mine", ignore=shutil.ignore_patterns("checkpoints", "train_state.pt"))
    at = start()
    assert at.selectbox(key="model").value.label.startswith("shipped")
    record_default(runs, runs / "mine")
    at = start()
    assert at.selectbox(key="model").value.label == "run: mine"


def test_no_view_shows_a_raw_none_nan_or_configuration_key(model_env: Path) -> None:
    """Every view of the page after a translation, and a ranking of lines with and without a reference: words only
    (no "None", "nan", "optim.", "data." where a learner reads)."""
    at = translated("El gato rojo 3.")
    views = at.pills(key="view").options
    assert len(views) >= 10, views
    found = {"first screen": raw_words(at)}
    for view in views:
        at.session_state["view"] = view
        at.run()
        assert not at.exception, (view, [e.message for e in at.exception])
        found[view] = raw_words(at)
    at.session_state["view"] = "Find the bad translations"
    at.run()
    at.text_area(key="ranking_text").set_value("El gato rojo 3.\tThe red cat 3.\nEl perro azul 7.\n").run()
    at.button(key="ranking_run").click().run()
    assert at.dataframe, "no ranking table"
    found["ranking"] = raw_words(at)
    assert not any(found.values()), {view: words for view, words in found.items() if words}


def test_the_arithmetic_score_table_shows_every_key_without_a_scroll_of_its_own(
    model_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table of one row's scores is as tall as its rows (a table of 10 rows' height scrolled inside the tab)."""
    heights: dict[str, object] = {}
    real = st.dataframe

    def recorded(data: object = None, *args: object, **kwargs: object) -> object:
        heights[" · ".join(map(str, getattr(data, "columns", ())))] = kwargs.get("height", "auto")
        return real(data, *args, **kwargs)

    monkeypatch.setattr(st, "dataframe", recorded)
    translated("El gato rojo 3.", "Arithmetic of a weight")
    (scores,) = [columns for columns in heights if "e^(s − max s)" in columns]
    assert heights[scores] == "content", heights
