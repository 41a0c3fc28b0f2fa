"""Whether a text is in the model's source language (``translate.source_language``), on the shipped model's guard:
French and German are not Spanish, Spanish with unseen names, dates, codes or typed in a hurry is; the page says what
language the input looks like."""

from __future__ import annotations

import pytest

from lab.page.direction import Languages
from lab.page.language_check import Evidence, warnings
from model.run_dir import NAME_GUARD_FILE
from translate.name_guard import NameGuard
from translate.source_language import is_source_language, known_share, looks_like
from translate.translator import DEFAULT_MODEL

ES_EN = Languages("es", "en", "Spanish", "English")
SPANISH = (
    "Me llamo Ana y vivo en Sevilla.",
    "Ayer vi a Itziar Goikoetxea en Bilbao.",
    "Teresa dice que está cansada.",
    "Nací el 3 de mayo de 1987.",
    "El vuelo IB3146 sale a las 18:45.",
    "me llamo lucia",
    "ernesto y clara viven juntos",
    "Te echaré de menos.",  # langid: French
    "Tom es un buen conductor.",  # langid: Catalan
    "Un café con leche, por favor.",
)
FOREIGN = (
    ("Un café au lait, s'il vous plaît.", "fr"),
    ("Je ne sais pas ce qu'il veut.", "fr"),
    ("Nous sommes allés au cinéma hier soir.", "fr"),
    ("Ich habe gestern meinen alten Freund getroffen.", "de"),
    ("Vielen Dank für deine Hilfe.", "de"),
    ("Die Kinder spielen im Park.", "de"),
)


@pytest.fixture(scope="module")
def guard() -> NameGuard:
    return NameGuard.load(DEFAULT_MODEL / NAME_GUARD_FILE)


@pytest.mark.parametrize("text", SPANISH)
def test_spanish_with_unseen_names_and_typed_is_the_source_language(guard: NameGuard, text: str) -> None:
    assert is_source_language(text, guard)


@pytest.mark.parametrize(("text", "code"), FOREIGN)
def test_french_and_german_are_not_spanish_and_are_named(guard: NameGuard, text: str, code: str) -> None:
    assert not is_source_language(text, guard)
    assert looks_like(text)[0] == code


def test_a_spanish_sentence_ending_in_french_is_not_taken_for_spanish(guard: NameGuard) -> None:
    assert not is_source_language("Un café con leche, s'il vous plaît.", guard)


def test_names_and_numbers_are_not_counted_as_words(guard: NameGuard) -> None:
    assert known_share("Ella vive con Goikoetxea en 2019.", guard) == known_share("Ella vive con en.", guard) == 1.0
    assert known_share("Ana vive con Goikoetxea.", guard) == 1.0  # a first word the corpus never saw is a name too
    assert known_share("Boston vive con Goikoetxea.", guard) == pytest.approx(2 / 3)  # one it saw counts: no word
    assert known_share("Goikoetxea 2019", guard) is None and known_share("2019 !", guard) is None


def test_without_a_guard_or_letters_nothing_is_refused(guard: NameGuard) -> None:
    assert is_source_language("Ich habe Hunger.", None)
    assert is_source_language("12:45 — 3,50 €", guard) and looks_like("12:45") == ("", 0.0)


def test_the_page_names_the_language_the_input_looks_like() -> None:
    french = Evidence("Je ne sais pas.", "I don't know.", 5, 0, 5, -1.0, language="fr")
    (said,) = warnings(french, ES_EN)
    assert said.startswith("The input looks like French, not Spanish") and "translates Spanish" in said
    unnamed = Evidence("Xa ne vai.", "He's not.", 5, 0, 5, -1.0, language="xx")
    assert "looks like another language (langid's guess: 'xx'), not Spanish" in warnings(unnamed, ES_EN)[0]
    assert warnings(Evidence("Me llamo Ana.", "My name is Ana.", 5, 0, 5, -1.0), ES_EN) == []
