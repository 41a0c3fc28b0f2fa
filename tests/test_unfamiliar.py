"""Far from what the model learned (lab/page/unfamiliar.py): rare words and long sentences flag an input, names the
guard read as stand-ins never do, an output that repeats itself is named, and the page says both with the model's
own figures."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import APP, COLOURS, NOUNS, translate
from streamlit.testing.v1 import AppTest

from data.entities import EntityPool
from data.readers import Pair
from lab.page.direction import Languages
from lab.page.language_check import Doubt, Evidence, model_doubt, unsure
from lab.page.unfamiliar import LONG_WORDS, MIN_RARE, RARE_USES, FarFigures, far_note, loop, reading
from model.run_dir import DOUBT_FILE, NAME_GUARD_FILE
from translate.name_guard import NameGuard, build
from translate.translator import Candidate, Translation

EVERYDAY = [
    Pair("Yo vivo aquí con mi perro.", "I live here with my dog."),
    Pair("El perro come pan.", "The dog eats bread."),
    Pair("Tom vive en Boston con Mary.", "Tom lives in Boston with Mary."),
    Pair("Tengo 1939 libros.", "I have 1939 books."),
]
LISTS = EntityPool(male=("Tom", "Itziar"), female=("Mary", "Ana"), surnames=("Ortiz",), places=("Sevilla", "Boston"))
ES_EN = Languages("es", "en", "Spanish", "English")
FIGURES = FarFigures(flagged_dev=0.02, flagged_far=0.8, chrf_dev=69.0, chrf_far=37.0, n_far=40)


@pytest.fixture(scope="module")
def guard() -> NameGuard:
    return build(EVERYDAY * 12, "es", LISTS, LISTS)  # each word used 12 times, each stand-in shared 12 times


def read(text: str, guard: NameGuard | None = None) -> Translation:
    """``text`` as one Translation (no decoding: only what the model read matters here)."""
    guarded = guard.protect(text) if guard else None
    best = Candidate(tokens=[2], log_prob=0.0, score=0.0, text="")
    return Translation(text, [], False, [best], guarded if guarded and guarded.swaps else None)


def test_known_words_are_near_and_rare_ones_far(guard: NameGuard) -> None:
    assert not reading([read("Yo vivo aquí con mi perro.")], guard).far
    far = reading([read("El dispositivo debe conectarse a una toma de tierra.")], guard)
    assert far.far and len(far.rare) >= MIN_RARE and "dispositivo" in far.rare and "perro" not in far.rare
    one = reading([read("El perro come pan integral.")], guard)
    assert one.rare == ("integral",) and not one.far  # one rare word is not enough


def test_a_long_sentence_of_known_words_is_far(guard: NameGuard) -> None:
    words = ("el perro come pan " * LONG_WORDS).split()
    assert reading([read(" ".join(words[: LONG_WORDS - 1]) + ".")], guard).far is False
    assert reading([read(" ".join(words[:LONG_WORDS]) + ".")], guard).far is True
    assert reading([read("Yo vivo aquí."), read(" ".join(words[:LONG_WORDS]))], guard).longest == LONG_WORDS


def test_names_the_guard_read_as_stand_ins_and_numbers_are_never_rare(guard: NameGuard) -> None:
    sentence = read("Ana vive en Sevilla desde 1987.", guard)
    assert sentence.guarded is not None and len(sentence.guarded.swaps) == 3
    assert reading([sentence], guard).rare == ("desde",)
    assert set(reading([read("Ana vive en Sevilla desde 1987.")], guard).rare) == {"Ana", "Sevilla", "desde"}


def test_the_note_names_the_rare_words_and_quotes_the_models_figures(guard: NameGuard) -> None:
    far = reading([read("El dispositivo debe conectarse a una toma de tierra.")], guard)
    note = far_note(far, FIGURES)
    assert "“dispositivo”" in note and f"fewer than {RARE_USES} times" in note
    assert "chrF 37 against 69" in note and "80%" in note and "2%" in note and "40 news" in note
    assert (
        "Measured" not in far_note(far, None) and far_note(reading([read("El perro come pan.")], guard), FIGURES) == ""
    )


def test_one_note_says_every_sign_with_its_figure_and_never_contradicts_its_rounding(guard: NameGuard) -> None:
    """The model unsure, the text far, the output looping: one note, each sign with the figure behind it."""
    far = reading([read("El dispositivo debe conectarse a una toma de tierra.")], guard)
    doubt = Doubt(0.605, 0.5, "measured on 4,000 dev translations", far=FIGURES)
    looping = Evidence("El dispositivo debe conectarse.", "The device device device.", 5, 0, 6, 6 * math.log(0.6049))
    note = unsure(looping, ES_EN, doubt, far)
    assert "0.60, below 0.61" in note and "about 50% of this model's dev translations" in note  # never "below 0.60"
    assert "“dispositivo”" in note and "chrF 37 against 69" in note and "“device” three or more times" in note
    confident = Evidence("El dispositivo debe conectarse.", "The device must be connected.", 5, 0, 6, -0.3)
    only_far = unsure(confident, ES_EN, doubt, far)
    assert only_far == far_note(far, FIGURES) and "unsure" not in only_far
    assert unsure(confident, ES_EN, doubt, reading([read("El perro come pan.")], guard)) == ""
    english = Evidence("The device device device.", "The device device device.", 5, 0, 6, -5.0)
    assert unsure(english, ES_EN, doubt, far) == ""  # a language check fails: the input is what to fix


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ("The process process process ended.", "process"),
        ("lightning lightning lightning lightning", "lightning"),
        ("I said the next week's, the next week's, the next week's plan.", "the next week's"),
        ("It is very, very good.", ""),
        ("Tom and Tom's friend met Tom.", ""),
        ("Ha ha ha.", "Ha"),
    ],
)
def test_an_output_saying_words_three_times_running_is_named(output: str, said: str) -> None:
    assert loop(output) == said


def test_the_far_figures_travel_in_the_models_doubt_file(tmp_path: Path) -> None:
    data = {"threshold": 0.6, "precision": 0.5, "measured": "on 4 dev translations", "far": vars(FIGURES)}
    (tmp_path / DOUBT_FILE).write_text(json.dumps(data), encoding="utf-8")
    assert model_doubt(tmp_path, None).far == FIGURES  # type: ignore[arg-type]: read from the file, never measured
    assert json.loads(model_doubt(tmp_path, None).to_json())["far"] == vars(FIGURES)  # type: ignore[arg-type]


@pytest.fixture
def familiar_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model_dir: Path) -> Path:
    """The tiny model with a guard that knows its toy words, and its far figures measured."""
    model = tmp_path / "familiar"
    shutil.copytree(tiny_model_dir, model)
    known = {w: 50 for w in ["el", *COLOURS, *NOUNS, *map(str, range(20))]}
    stand_ins = {"male": (), "female": ("Mary",), "place": (), "number": ("12",)}
    NameGuard(
        known, {}, {"el": 400}, frozenset(), frozenset(), {"ana": "female"}, frozenset(), stand_ins, {"": 0.0}
    ).save(model / NAME_GUARD_FILE)
    data = {"threshold": 0.0, "precision": None, "measured": "none below 0.00", "far": vars(FIGURES)}
    (model / DOUBT_FILE).write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("LAB_MODEL_DIR", str(model))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    return model


def test_the_page_says_when_the_text_is_far_from_what_the_model_learned(familiar_model: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    near = translate(at, "el gato rojo 3.")
    assert not [w for w in near.warning if "far from what the model learned" in w.value]
    far = translate(at, "el gato zorbulax quimerón rojo.")
    said = [w.value for w in far.warning if "far from what the model learned" in w.value]
    assert said and "“zorbulax”" in said[0] and "chrF 37 against 69" in said[0]
    assert [w.value for w in far.main.get_by_key("unsure").warning] == said  # one box says it
