"""Phrase lists and their exact-match scoring (training/phrases.py); the everyday list (workshop/everyday.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.phrases import Phrase, PhraseListError, is_accepted, normalise_answer, read_phrases
from translate.translator import DEFAULT_MODEL
from workshop.everyday import everyday_list, mark_seen, training_sources

ROOT = Path(__file__).resolve().parent.parent


def test_answers_match_whatever_the_case_and_punctuation() -> None:
    assert normalise_answer("Hello, world!") == normalise_answer("hello world") == "hello world"
    assert normalise_answer("  I'm   fine,\tthanks. ") == normalise_answer("i'm fine thanks")
    phrase = Phrase("Hola mundo", ("Hello world", "Hi world"), 1)
    assert is_accepted("Hello, world.", phrase) and is_accepted("HI WORLD!", phrase)
    assert not is_accepted("Hello", phrase) and not is_accepted("Hit world is world.", phrase)


def test_the_everyday_list_is_everyday_and_half_typed() -> None:
    phrases = read_phrases(everyday_list(DEFAULT_MODEL))
    assert len(phrases) >= 50 and all(p.accepted for p in phrases)
    # Typed casually: no capitals, no ¿¡, no final punctuation, no accents (ñ may stay, as on Spanish keyboards).
    typed = [p for p in phrases if p.source == p.source.lower() and not set(p.source) & set("¿¡.?!áéíóúü")]
    assert len(typed) >= 0.45 * len(phrases)
    sources = {p.source for p in phrases}
    assert {"Hola mundo", "hola mundo", "¡Hola, mundo!"} <= sources


def test_phrases_are_marked_seen_in_training_however_typed(tiny_model_dir: Path) -> None:
    seen = training_sources(tiny_model_dir)
    train = (tiny_model_dir / "splits" / "train.tsv").read_text(encoding="utf-8").splitlines()
    source = train[0].split("\t")[0]
    rows = [{"source": source.lower().rstrip("."), "accepted": True}, {"source": "Nunca visto.", "accepted": False}]
    marked = mark_seen({"rows": rows}, seen)
    assert [r["seen"] for r in marked["rows"]] == [True, False]
    assert marked["seen"] == {"accepted": 1, "phrases": 1} and marked["generalised"] == {"accepted": 0, "phrases": 1}
    assert training_sources(tiny_model_dir / "missing") is None


@pytest.mark.parametrize(
    ("text", "where"),
    [("Hola mundo\n", ":1:"), ("Hola\tHello\tHi\n", ":1:"), ("# comment\n\nHola\t | \n", ":3:"), ("", "no phrases")],
)
def test_a_malformed_list_names_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "phrases.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PhraseListError, match=where) as err:
        read_phrases(path)
    assert str(path) in str(err.value)


def test_the_english_to_spanish_lists_are_what_a_learner_types_first() -> None:
    phrases = read_phrases(ROOT / "data" / "everyday-en-es.tsv")
    assert len(phrases) >= 60 and {"Hello world", "hello world"} <= {p.source for p in phrases}
    assert all(not set(p.source) & set("¿¡áéíóúñ") for p in phrases)  # English sources, Spanish answers
    assert sum(len(p.accepted) > 1 for p in phrases) >= 15  # tú and usted, both genders
    typed = [p for p in phrases if p.source == p.source.lower() and p.source[-1:].isalpha()]
    assert len(typed) >= 0.15 * len(phrases)
    assert len(read_phrases(ROOT / "data" / "canaries-en-es.tsv")) >= 5
