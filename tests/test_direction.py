"""The lab in both directions: with an English → Spanish model in use, every word of both pages follows it (no
"Spanish → English", no "English token", no other model's dev figures), the Train page starts only from models of the
corpus's direction (the shipped one by default), and the gold alignments are read the other way round."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import text_format
from streamlit.testing.v1 import AppTest

from lab.alignment.gold import fits, reversed_gold
from lab.alignment.scoring import read_gold
from lab.page import model_choices
from lab.page.direction import Languages, languages
from lab.page.examples import EXAMPLES, EXAMPLES_EN_ES, examples_for
from lab.page.language_check import Doubt, Evidence, model_doubt, unsure, warnings
from translate.settings import REPO_ROOT
from translate.translator import Translator

APP, TRAIN = str(REPO_ROOT / "app.py"), str(REPO_ROOT / "pages" / "1_Train.py")
FORBIDDEN = ("Spanish → English", "English token", "shipped model's dev")
EN_ES = Languages("en", "es", "English", "Spanish")
ENGLISH_FIRST = (
    ("The red cat 3.", "El gato rojo 3."),
    ("Where is the train station?", "¿Dónde está la estación de tren?"),
    ("She doesn't speak English.", "Ella no habla inglés."),
)
TABS = (
    "Alignment",
    "Step by step",
    "Arithmetic of a weight",
    "What if",
    "Teach a correction",
    "Positional encoding",
    "Find the bad translations",
    "All heads",
)


@pytest.fixture(scope="module")
def en_es_model(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Path:
    """A tiny English → Spanish model: the toy Spanish–English corpus trained the other way (``data.reverse``)."""
    from training.train import main

    out = tmp_path_factory.mktemp("shipped") / "en-es"
    args = ["--config", "configs/tiny.toml", "--corpus", str(toy_corpus), "--out", str(out), "--data.reverse=true"]
    assert main([*args, "--optim.max_steps=300", "--run.eval_every=150"]) == 0
    return out


@pytest.fixture
def en_es_in_use(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, en_es_model: Path) -> Iterator[Path]:
    """The English → Spanish model as the shipped default and a finished English → Spanish run (the shipped Spanish
    → English model beside them, in checkpoints/)."""
    runs = tmp_path / "runs"
    shutil.copytree(en_es_model, runs / "en-es-run")
    monkeypatch.setenv("LAB_MODEL_DIR", str(en_es_model))
    monkeypatch.setenv("LAB_RUNS_DIR", str(runs))
    monkeypatch.setenv("LAB_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    yield runs


def page_text(at: AppTest) -> str:
    """Every string the page holds: text, labels, help, options, chart titles (each element's proto, as UTF-8)."""

    def walk(node: object) -> Iterator[str]:
        proto = getattr(node, "proto", None)
        if proto is not None:
            yield text_format.MessageToString(proto, as_utf8=True)
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    return "\n".join(walk(at._tree))


def leftovers(at: AppTest) -> list[str]:
    text = page_text(at)
    return [phrase for phrase in FORBIDDEN if phrase in text]


def test_the_translate_page_speaks_of_english_to_spanish_in_every_tab(en_es_in_use: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    assert at.title[0].value == "English → Spanish: inside a Transformer"
    assert at.text_area(key="source").value == EXAMPLES_EN_ES[0].source  # the first screen: an English example
    assert any("Spanish token about to be produced" in c.value for c in at.caption)  # how to read a map
    assert not leftovers(at)
    at.text_area(key="source").set_value("The red cat 3.")
    at.button(key="translate").click().run()
    for tab in TABS:
        at.session_state["view"] = tab
        at.run()
        assert not at.exception, tab
        assert not leftovers(at), tab
    at.session_state["view"] = "What if"
    at.run()
    assert at.radio(key="whatif_tool").options[0] == "Change the English"
    at.radio(key="whatif_tool").set_value("Change the English").run()
    assert not at.exception and not leftovers(at)


def test_the_train_page_starts_from_the_shipped_model_of_the_corpus_direction_only(
    en_es_in_use: Path, en_es_model: Path
) -> None:
    at = AppTest.from_file(TRAIN, default_timeout=60)
    at.session_state["owner_token"] = "tab"
    at.run()
    corpus = "".join(f"{en} {i}\t{es} {i}\n" for i in range(30) for en, es in ENGLISH_FIRST)
    at.file_uploader(key="upload").upload("en-es.tsv", corpus.encode()).run()
    assert not at.exception
    assert (at.selectbox(key="source_lang").value, at.selectbox(key="target_lang").value) == ("en", "es")
    chooser = at.selectbox(key="init_from")
    assert chooser.options == ["random weights (a new model)", "shipped: en-es", "run: en-es-run"]  # no es-en one
    assert chooser.value == 1  # fine-tuning the direction's shipped model is the default
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Not offered to start from: shipped: es-en (from Spanish into English)") for c in captions)
    assert any(c.startswith("Fine-tuning the shipped English → Spanish model is the default") for c in captions)
    assert not leftovers(at)
    chooser.set_value(0).run()  # the user's choice stays
    at.run()
    assert at.selectbox(key="init_from").value == 0


def test_the_shipped_model_of_each_direction_is_found_and_listed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, en_es_model: Path, tiny_model_dir: Path
) -> None:
    shipped = tmp_path / "checkpoints"
    shutil.copytree(en_es_model, shipped / "en-es")
    monkeypatch.setattr(model_choices, "SHIPPED_DIR", shipped)
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir))  # Spanish → English
    assert model_choices.other_shipped() == [shipped / "en-es"]
    assert model_choices.shipped_of(("en", "es")) == shipped / "en-es"
    assert model_choices.shipped_of(("es", "en")) == tiny_model_dir and model_choices.shipped_of(("fr", "en")) is None
    labels = [c.label for c in model_choices.find_models(tiny_model_dir, tmp_path / "runs", (), [shipped / "en-es"])]
    assert labels == [f"shipped: {tiny_model_dir.name}", "shipped: en-es"]
    monkeypatch.setenv("LAB_MODEL_DIR", str(shipped / "en-es"))  # then the other direction's is not listed twice
    assert model_choices.other_shipped() == []


def test_the_fine_tune_forecast_of_another_direction_is_scaled_to_its_own_score(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, en_es_model: Path
) -> None:
    from jobs.control import parent_score
    from jobs.forecast import parse_table
    from views import train_estimate

    parent = tmp_path / "en-es"
    shutil.copytree(en_es_model, parent)
    scores = json.loads((parent / "metrics.json").read_text())
    (parent / "metrics.json").write_text(json.dumps(scores | {"dev_greedy": {"bleu": 28.93}}))
    assert parent_score(parent) == (28.93, "dev BLEU") and parent_score(en_es_model)[1] == "test BLEU"
    monkeypatch.setattr(train_estimate, "shipped_of", lambda pair: parent if pair == ("en", "es") else None)
    scores_of = {parent: (28.93, "dev BLEU")}
    monkeypatch.setattr(train_estimate, "parent_score", lambda p: scores_of.get(p, (57.86, "dev BLEU")))
    table = parse_table(
        {
            "preset": "small",
            "curves": [
                {"mode": "scratch", "pairs": 1000, "points": [[100, 0.5], [400, 2.0]]},
                {"mode": "finetune", "pairs": 1000, "points": [[50, 60.0], [200, 58.0]]},
            ],
        }
    )
    text = train_estimate.forecast_sentences(1000, 200, "finetune", "small", ("en", "es"), table)
    assert text.startswith("Forecast: about 30 dev BLEU") and "scaled to this one's 28.9 dev BLEU" in text
    assert "Spanish → English" not in text
    assert "from scratch, 1,000 pairs reach about 1 BLEU" in text and "starts from 28.9 dev BLEU" in text
    scratch = train_estimate.forecast_sentences(1000, 200, "scratch", "small", ("en", "es"), table)
    assert "fine-tune the shipped English → Spanish model (it starts from 28.9 dev BLEU)" in scratch


def test_the_examples_and_the_gold_alignments_follow_the_direction(tmp_path: Path) -> None:
    assert (
        examples_for(EN_ES) == EXAMPLES_EN_ES and examples_for(Languages("es", "en", "Spanish", "English")) == EXAMPLES
    )
    assert examples_for(Languages("fr", "en", "French", "English")) == ()
    assert len({e.source for e in EXAMPLES_EN_ES}) == len(EXAMPLES_EN_ES) >= 5
    gold = tmp_path / "gold.tsv"
    gold.write_text("The black cat .\tEl gato negro .\t0-0 1-2 2-1 3-3\n", encoding="utf-8")
    (es_en,), (en_es,) = read_gold(gold), read_gold(gold, reverse=True)
    assert es_en.source == ["El", "gato", "negro", "."] and (1, 2) in es_en.links  # (English word, Spanish word)
    assert en_es.source == ["The", "black", "cat", "."] and en_es.target == es_en.source
    assert en_es.links == frozenset((j, i) for i, j in es_en.links)  # (Spanish word, English word)
    assert fits(EN_ES) and reversed_gold(EN_ES) and not reversed_gold(languages(Path("missing")))
    assert not fits(Languages("fr", "en", "French", "English"))


def test_the_doubt_is_the_models_own_or_said_to_be_unknown(en_es_model: Path, tmp_path: Path) -> None:
    e = Evidence("The cat sleeps.", "El gato.", 4, 0, 4, -4.0)  # 0.37 per token
    said = unsure(e, EN_ES, Doubt(0.6, 0.42, "measured on 200 dev translations, 30 of them below 0.6"))
    assert "about 42% of this model's dev translations that score that low are wrong" in said
    assert "not known: it has no dev split to measure it on" in unsure(e, EN_ES)
    measured = model_doubt(en_es_model, Translator.load(en_es_model))  # its 20 dev sentences, translated now
    assert "20 dev translations" in (measured.measured or measured.unmeasured)
    alone = model_doubt(tmp_path, Translator.load(en_es_model))  # no splits/, no split.json: unmeasured, and why
    assert alone.precision is None and "its dev split cannot be read (" in unsure(e, EN_ES, alone)
    (tmp_path / "doubt.json").write_text(Doubt(0.6, 0.5, "measured on 4,000 dev translations").to_json())
    assert model_doubt(tmp_path, Translator.load(en_es_model)).precision == 0.5
    spanish = Evidence("el gato es de la casa", "the cat", 7, 0, 3, -1.0)
    assert any("looks like Spanish" in w for w in warnings(spanish, EN_ES))  # typed into a model into Spanish
