"""The alignment tab (issue 14, item 3): the model's stored best aligner, offered by default, and the score of the
chosen layer and head on a gold sentence, equal to what the bench's own code computes. Gold files are written here
(toy sentences): the real gold data is never copied into the repository."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest

from lab.alignment.bench_result import AlignmentFileError, load_alignment
from lab.alignment.gold import DEFAULT_GOLD, GOLD_ENV, gold_path, offered, pair_for, source_text
from lab.alignment.methods import Method, force_decode
from lab.alignment.scoring import read_gold
from model.run_dir import ALIGNMENT_FILE, CONFIG_FILE
from translate.settings import REPO_ROOT
from translate.translator import DEFAULT_MODEL, Translator
from views.alignment_tab import NOT_ALIGNMENT, SCORES_DEFINED
from viz.alignment_lines import AGREEMENT, ATTENTION, BOTH, PEOPLE, agreement_chart, agreement_frames
from workshop.bench.alignment import GoldFile, save_alignment
from workshop.bench.attribution_aligner import AttributionMethod

GOLD = (  # English, Spanish, links (English index - Spanish index), as XL-WA writes them
    "The red cat 3 .\tEl gato rojo 3 .\t0-0 1-2 2-1 3-3 4-4\n"
    "The big blue dog is sleeping in the garden today .\tEl perro azul grande duerme hoy en el jardín .\t"
    "0-0 1-3 2-2 3-1 5-4 6-6 7-7 8-8 9-5 10-9\n"
    "The green book 7 .\tEl libro verde 7 .\t0-0 1-2 2-1 3-3 4-4\n"
)


def write_gold(folder: Path) -> Path:
    path = folder / "gold.tsv"
    path.write_text(GOLD, encoding="utf-8")
    return path


def stored_records(layer: int, head: int | None, reading: str) -> list[dict]:
    method = Method("argmax", layer, head, reading)  # type: ignore[arg-type]
    return [
        {"method": "diagonal", "precision": 0.3, "recall": 0.3, "aer": 0.7, "dev_aer": 0.7, "baseline": "diagonal"},
        {"method": method.name, "precision": 0.6, "recall": 0.55, "aer": 0.4251, "dev_aer": 0.4}
        | {"chosen_on_dev": True, **method.fields()},
        {"method": "eflomal", "precision": 0.8, "recall": 0.8, "aer": 0.2149, "dev_aer": 0.2, "baseline": "eflomal"},
    ]


@pytest.fixture
def model_dir(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """A copy of the tiny model (one decoder layer, two heads) that a test may store a result in."""
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, model_dir: Path, tmp_path: Path) -> Path:
    monkeypatch.setenv("LAB_MODEL_DIR", str(model_dir))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    monkeypatch.setenv(GOLD_ENV, str(write_gold(tmp_path)))
    return model_dir


def alignment_tab(at: AppTest) -> AppTest:
    at.session_state["view"] = "Alignment"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def gold_chart(at: AppTest) -> pd.DataFrame:
    """The links of the reference alignment drawn in the gold score (the chart's data, as the browser gets it)."""
    (chart,) = at.main.get_by_key("gold_score").get("vega_lite_chart")
    frames = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in chart.proto.datasets]
    (links,) = [f for f in frames if "drawn by" in f.columns]
    return links


def translate(at: AppTest) -> AppTest:
    at.button(key="translate").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


# --- lab: where the gold file is, which sentences are offered, the stored result ---


def test_the_gold_file_comes_from_one_variable_with_a_default_beside_the_repository(tmp_path: Path) -> None:
    assert gold_path({}) == DEFAULT_GOLD.resolve() and DEFAULT_GOLD.parent.name == "xl-wa-es"
    assert gold_path({GOLD_ENV: str(tmp_path / "dev.tsv")}) == tmp_path / "dev.tsv"
    assert gold_path({GOLD_ENV: "gold/dev.tsv"}) == REPO_ROOT / "gold" / "dev.tsv"  # relative: from the repository


def test_the_shortest_pairs_are_offered_in_file_order_and_found_again_by_their_text(tmp_path: Path) -> None:
    pairs = read_gold(write_gold(tmp_path))
    assert offered(pairs, 2) == [0, 2]  # the long second sentence is left out
    assert source_text(pairs[0]) == "El gato rojo 3."
    assert pair_for(pairs, " El gato rojo 3.\n") == pairs[0] and pair_for(pairs, "El gato rojo") is None


def test_bench_save_stores_figures_only_and_the_app_reads_back_its_dev_choice(model_dir: Path, tmp_path: Path) -> None:
    from workshop.bench.alignment import main

    gold = write_gold(tmp_path)
    assert main(["--model", str(model_dir), "--gold", str(gold), "--dev", str(gold), "--no-eflomal", "--save"]) == 0
    text = (model_dir / ALIGNMENT_FILE).read_text(encoding="utf-8")
    words = {w for line in GOLD.splitlines() for side in line.split("\t")[:2] for w in side.split() if len(w) > 2}
    assert not words & set(re.findall(r"\w+", text))  # no gold word, only figures
    payload = json.loads(text)
    assert payload["test"]["pairs"] == 3 and len(payload["test"]["sha256"]) == 64
    chosen = [r for r in payload["records"] if r.get("chosen_on_dev") and r["extraction"] == "argmax"]
    (record,) = [r for r in chosen if "attribution" not in r]  # the attention's: the app's default aligner
    stored = load_alignment(model_dir)
    assert stored is not None and stored.best == Method.from_fields(record)
    assert (stored.aer, stored.eflomal_aer) == (record["aer"], None)


def test_a_model_without_a_stored_result_has_none_and_a_broken_one_says_where(tmp_path: Path) -> None:
    assert load_alignment(tmp_path) is None
    (tmp_path / ALIGNMENT_FILE).write_text('{"records": []}', encoding="utf-8")
    with pytest.raises(AlignmentFileError, match=ALIGNMENT_FILE):
        load_alignment(tmp_path)


def test_the_shipped_model_stores_its_best_aligner_as_figures_only() -> None:
    stored = load_alignment(DEFAULT_MODEL)
    assert stored is not None and stored.best.extraction == "argmax" and stored.eflomal_aer is not None
    assert 0 < stored.eflomal_aer < stored.aer < 1
    payload = json.loads((DEFAULT_MODEL / ALIGNMENT_FILE).read_text(encoding="utf-8"))
    assert payload["test"]["pairs"] > payload["dev"]["pairs"] > 0
    assert set(payload) == {"benchmark", "test", "dev", "records"}
    allowed = {
        "method",
        "precision",
        "recall",
        "aer",
        "dev_aer",
        "baseline",
        "chosen_on_dev",
        *Method.fields(stored.best),
        *AttributionMethod("integrated", "predicts", "argmax").fields(),
    }
    assert all(set(r) <= allowed for r in payload["records"])  # names and figures: no room for a sentence


# --- the app ---


def test_the_tab_names_the_stored_best_aligner_and_starts_on_it(app_env: Path, tmp_path: Path) -> None:
    gold = GoldFile("gold.tsv", "0" * 64, 3)
    save_alignment(app_env, "XL-WA", stored_records(0, 1, "shift"), gold, gold)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value("El perro azul 7.")
    at = alignment_tab(translate(at))
    caption = at.main.get_by_key("best_aligner").caption[0].value
    assert caption.startswith("Best aligner of this model on XL-WA test: layer 1, head 2")
    assert "(AER 0.43; eflomal 0.21)" in caption
    said = [c.value for c in at.main.get_by_key("best_aligner").caption]
    assert said[1].startswith("eflomal (Östling & Tiedemann 2016) is a statistical word aligner")
    assert at.main.get_by_key("scores_defined").caption[0].value == SCORES_DEFINED
    assert at.selectbox(key="align_layer").value == 0 and at.selectbox(key="align_head").value == 1
    assert at.radio(key="reading").value == "shift"
    assert at.selectbox(key="head").value == -1  # the maps above keep their own default (mean of heads)


def test_the_tab_says_attention_is_not_alignment_with_the_corpus_figures_in_large_type(app_env: Path) -> None:
    gold = GoldFile("gold.tsv", "0" * 64, 3)
    save_alignment(app_env, "XL-WA", stored_records(0, 1, "shift"), gold, gold)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value("El perro azul 7.")
    at = alignment_tab(translate(at))
    assert any(m.value == NOT_ALIGNMENT for m in at.markdown)
    shown = {m.label: m.value for m in at.main.get_by_key("best_aligner").metric}
    assert shown == {"AER of its best head, XL-WA test": "0.43", "AER of eflomal (a word aligner), XL-WA test": "0.21"}
    assert at.toggle(key="align_words").value  # whole words unless the learner asks for subwords
    assert "python -m" not in at.main.get_by_key("best_aligner").caption[0].value


def test_without_a_stored_result_the_tab_starts_on_the_last_layer_and_can_follow_the_maps(app_env: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value("El perro azul 7.")
    at = alignment_tab(translate(at))
    with pytest.raises(KeyError):
        at.main.get_by_key("best_aligner")
    assert at.selectbox(key="align_head").value == -1 and at.radio(key="reading").value == "predicts"
    at.selectbox(key="head").select(1).run()
    at.button(key="align_follow").click().run()
    assert not at.exception
    assert at.selectbox(key="align_layer").value == 0 and at.selectbox(key="align_head").value == 1


def test_a_picked_gold_sentence_is_scored_as_the_bench_scores_it(app_env: Path, tmp_path: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    picker = at.selectbox(key="gold")
    assert picker.options == ["El gato rojo 3.", "El perro azul grande duerme hoy en el jardín.", "El libro verde 7."]
    picker.select_index(0).run()
    assert at.text_area(key="source").value == "El gato rojo 3."
    at = alignment_tab(translate(at))
    pair = read_gold(tmp_path / "gold.tsv")[0]
    forced = force_decode(Translator.load(app_env), pair)
    for head in (None, 0, 1):
        at.selectbox(key="align_head").select(-1 if head is None else head).run()
        assert not at.exception
        expected = Method("argmax", 0, head, "predicts").score_on(forced, pair)
        shown = {m.label: m.value for m in at.main.get_by_key("gold_score").metric}
        assert shown == {
            "Precision": f"{expected.precision:.3f}",
            "Recall": f"{expected.recall:.3f}",
            "AER": f"{expected.aer:.3f}",
        }
        caption = at.main.get_by_key("gold_score").caption[0].value
        assert caption.startswith(f"{expected.correct} of the {expected.predicted} links drawn")
        assert f"among the {expected.gold} links people drew" in caption
        table = at.table[-1].value
        assert (table["drawn by"] != ATTENTION).sum() == expected.gold == 5
        assert (table["drawn by"] != PEOPLE).sum() == expected.predicted
        assert (table["drawn by"] == BOTH).sum() == expected.correct
        drawn = gold_chart(at)  # the reference the score is computed on, drawn with people's links
        assert sorted(drawn["target"]) == sorted(table["English"]) and set(drawn["drawn by"]) <= set(AGREEMENT)
    assert at.main.get_by_key("scores_defined").caption[0].value == SCORES_DEFINED


def test_a_picked_gold_sentence_is_translated_at_once_in_the_alignment_tab(app_env: Path) -> None:
    """As a guided example is: no Translate to press; the Alignment tab opens on its score. Typing other text makes
    the picker forget it."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="gold").select_index(0).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.main.get_by_key("translation").text[0].value.strip()
    assert at.session_state["view"] == "Alignment" and at.main.get_by_key("gold_score").metric
    at.text_area(key="source").set_value("El gato rojo 4.").run()
    assert at.selectbox(key="gold").value is None


def test_an_edited_gold_sentence_is_not_scored(app_env: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="gold").select_index(0).run()
    at.text_area(key="source").set_value("El gato rojo 4.")
    at = alignment_tab(translate(at))
    with pytest.raises(KeyError):
        at.main.get_by_key("gold_score")


def test_without_a_gold_file_there_is_no_picker_and_no_error(
    app_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(GOLD_ENV, str(tmp_path / "absent.tsv"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "gold"]
    assert any("absent.tsv not found" in c.value for c in at.caption)
    at.text_area(key="source").set_value("El gato rojo 3.")
    at = alignment_tab(translate(at))
    with pytest.raises(KeyError):
        at.main.get_by_key("gold_score")


def test_a_model_of_another_language_pair_is_offered_no_gold_sentences(app_env: Path) -> None:
    config = json.loads((app_env / "train_config.json").read_text())
    config["data"].update(src_lang="pt", tgt_lang="en")
    (app_env / "train_config.json").write_text(json.dumps(config))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "gold"]
    assert any("for Portuguese → English: the gold file is for another" in c.value for c in at.caption)
    at.text_area(key="source").set_value("El gato rojo 3.")  # a gold sentence, typed: still not scored
    at = alignment_tab(translate(at))
    with pytest.raises(KeyError):
        at.main.get_by_key("gold_score")


def test_the_layer_options_follow_the_model_shown(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """From the shipped model (several decoder layers) to a run with one: the tab offers that run's one layer."""
    monkeypatch.setenv("LAB_MODEL_DIR", str(DEFAULT_MODEL))
    monkeypatch.setenv("LAB_RUNS_DIR", str(model_dir.parent))
    monkeypatch.setenv("LAB_THREADS", "1")
    monkeypatch.setenv(GOLD_ENV, str(tmp_path / "absent.tsv"))
    n_shipped = json.loads((DEFAULT_MODEL / CONFIG_FILE).read_text())["n_decoder_layers"]
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value("El gato negro duerme.")
    at = alignment_tab(translate(at))
    assert at.selectbox(key="align_layer").options == [f"layer {i + 1}" for i in range(n_shipped)]
    at.selectbox(key="align_layer").select(n_shipped - 1).run()  # the learner picks the shipped model's last layer
    run = at.selectbox(key="model").options.index(f"run: {model_dir.name}")  # after the shipped models
    assert n_shipped > 1
    at.selectbox(key="model").select_index(run).run()
    at = translate(at)
    assert at.selectbox(key="align_layer").options == ["layer 1"] and at.selectbox(key="align_layer").value == 0
    said = [c.value for c in at.caption] + [b.label for b in at.button] + [o for s in at.selectbox for o in s.options]
    assert not [line for line in said if "layer 2" in line or f"layer {n_shipped}" in line]


def test_the_agreement_drawing_has_each_link_once_coloured_by_who_drew_it() -> None:
    drawn, gold = {(0, 0): 0.9, (1, 1): 0.6}, {(0, 0), (1, 2), (2, 1)}
    tokens, links = agreement_frames(["El", "gato", "rojo"], ["The", "red", "cat"], drawn, gold, "Spanish", "English")
    assert list(zip(links["target"], links["source"], links["drawn by"], strict=True)) == [
        ("The", "El", BOTH),
        ("red", "gato", ATTENTION),
        ("red", "rojo", PEOPLE),
        ("cat", "gato", PEOPLE),
    ]
    assert links["weight"].isna().tolist() == [False, False, True, True]  # people give links, not weights
    spec = agreement_chart(tokens, links, "t", "Spanish", "English").to_dict()
    assert spec["resolve"] == {"scale": {"color": "independent"}}  # who drew a link and which sentence: two legends
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == list(AGREEMENT)
