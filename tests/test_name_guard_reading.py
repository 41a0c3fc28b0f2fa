"""What the name guard reads, on the shipped model's guard (translate/name_guard.py): only the model's source language,
not a phrase the model translates, a stand-in of the name's gender, dates whole, times as times, names a cue or "y yo"
announces. The sentences are none of those the rules were tuned on (the issue's and the copy check's)."""

from __future__ import annotations

import pytest
from test_name_guard import EchoTranslator

from model.run_dir import NAME_GUARD_FILE
from translate.name_guard import NameGuard
from translate.translator import DEFAULT_MODEL


@pytest.fixture(scope="module")
def guard() -> NameGuard:
    return NameGuard.load(DEFAULT_MODEL / NAME_GUARD_FILE)


def swaps(guard: NameGuard, text: str) -> list[tuple[str, str]]:
    return [(s.original, s.kind) for s in guard.protect(text).swaps]


@pytest.mark.parametrize(
    ("text", "code"),
    [("Morgen fahre ich mit Klaus nach Hamburg.", "de"), ("Nous partons demain pour Lyon avec Claire.", "fr")],
)
def test_text_in_another_language_is_not_guarded_and_says_what_it_looks_like(guard, text, code):
    result = EchoTranslator(guard).translate(text)
    assert result.guarded is None and result.text == text
    assert f"it looks like {code}, not es" in result.guard_note


def test_a_listed_place_written_as_words_the_corpus_uses_is_left_to_the_model(guard):
    """ "la victoria" is a town in the lists; written in lowercase after "La", it is the word the model translates."""
    assert swaps(guard, "La victoria del equipo fue justa.") == []
    assert swaps(guard, "Nací en La Victoria.") == [("La Victoria", "place")]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Zuriñe está muy contenta.", "female"),  # the sentence agrees: "contenta"
        ("La profesora Huamán llega hoy.", "female"),  # an article before the name: "la profesora"
        ("Idoia lee.", "female"),  # nothing in the sentence: the name's ending
        ("Xabier lee la carta.", "male"),  # "la carta" is not about Xabier
        ("Iñaki está contento.", "male"),
        ("Alaitz es muy tímida.", "female"),  # an adjective accented inside agrees; "está" (a verb) does not
    ],
)
def test_a_stand_in_has_the_gender_of_the_sentence_else_of_the_name(guard, text, kind):
    ((_, got),) = swaps(guard, text)
    assert got == kind


def test_a_date_keeps_its_numbers_and_its_month(guard):
    """A date reads as one the model has read ("30 de octubre de 2013"); its numbers and a rare month come back."""
    guarded = guard.protect("Llegó el 7 de agosto de 1992.")
    assert guarded.read_as == "Llegó el 30 de octubre de 2013."
    assert guarded.restore("He arrived on October 30, 2013.") == ("He arrived on August 7, 1992.", "")
    assert guard.protect("Llegó el 7 de octubre de 1992.").read_as == "Llegó el 30 de octubre de 2013."


def test_a_time_reads_as_a_time_the_corpus_holds_and_a_code_as_a_number(guard):
    guarded = guard.protect("El tren AV2041 llega a las 21:10.")
    assert guarded.read_as == "El tren 100 llega a las 2:30."
    assert guarded.restore("The 100 train arrives at 2:30.") == ("The AV2041 train arrives at 21:10.", "")


@pytest.mark.parametrize(
    ("text", "originals"),
    [
        ("me llamo clara", ["clara"]),  # a listed name, also a word, announced by "me llamo"
        ("la sopa está clara", []),
        ("Esperanza y yo vamos al cine.", ["Esperanza"]),  # "y yo": a person, though "esperanza" is a word
        ("Mamá y yo vamos al cine.", []),  # a word the corpus begins sentences with
        ("hable con anastasio wexford ayer", ["anastasio wexford"]),  # an unseen word before an unseen name
        ("la casa de quiroga es grande", ["quiroga"]),  # unseen after a cue, though shaped like a word
        ("vivo con leocadio", ["leocadio"]),
        ("no vuelvas a entrometerte", []),  # shaped too much like a word: a verb the corpus never met
        ("Ayer conocí a Mira en el parque.", ["Mira"]),  # the corpus translates "Mira" only at a start: a verb
    ],
)
def test_a_cue_announces_a_name_that_is_also_a_word(guard, text, originals):
    assert [original for original, _ in swaps(guard, text)] == originals


@pytest.mark.parametrize(
    ("text", "originals"),
    [
        ("Ayer Kenji donó sangre en el hospital.", ["Kenji"]),  # written, a lowercase word after a name is no surname
        ("ayer vi a mateus arroyo en el parque", ["mateus arroyo"]),  # typed, a word the corpus rarely uses may be
    ],
)
def test_a_surname_in_lowercase_only_where_the_text_is_typed(guard, text, originals):
    assert [original for original, _ in swaps(guard, text)] == originals


@pytest.mark.parametrize(
    ("text", "swapped"),
    [
        ("El juez anuló el proceso de adjudicación.", []),  # unseen, after "de", not shaped like a name
        ("Los resultados del ensayo clínico llegan hoy.", []),  # unseen, a form of a seen word ("clínica")
        ("Ayer vi a itziar en la playa.", [("itziar", "female")]),  # announced by "a": a name, however written
        ("me llamo beatriz y vivo aqui", [("beatriz", "female")]),  # typed: lowercase is how names come
    ],
)
def test_in_text_written_with_accents_a_lowercase_word_needs_a_cue_or_a_names_form(guard, text, swapped):
    assert swaps(guard, text) == swapped


@pytest.mark.parametrize(
    ("text", "swapped"),
    [
        ("mi profesor es de ecuador", [("ecuador", "place")]),  # typed after "de": the corpus writes it "Ecuador"
        ("Mi profesor es de Ecuador.", [("Ecuador", "place")]),  # a name the corpus holds, not a person's, after "de"
        ("mi casa es de madera", []),  # a word the corpus writes in lowercase
    ],
)
def test_a_name_the_corpus_capitalises_typed_after_de_is_a_place(guard, text, swapped):
    assert swaps(guard, text) == swapped
    assert [kind for _, kind in swaps(guard, "la casa de quispe es grande")] != ["place"]  # never seen: a person


@pytest.mark.parametrize(
    ("text", "originals"),
    [
        ("que piensa gumersindo de tu casa", ["gumersindo"]),  # typed, unseen, after a verb: a name
        ("tom tiene el pelo canoso", []),  # after a noun (no sentence of the corpus begins with "pelo")
        ("compre un sombrero fucsia", []),
        ("tom no ha planchado la camisa", []),  # a form of a word the corpus holds ("planchar")
        ("Volé a Roma ayer.", []),  # began one sentence of the corpus, and not shaped like a name: a verb
    ],
)
def test_typed_a_word_the_corpus_never_wrote_is_a_name_unless_the_words_around_it_say_otherwise(guard, text, originals):
    assert [original for original, _ in swaps(guard, text)] == originals


@pytest.mark.parametrize(
    ("text", "originals"),
    [
        ("paloma no quiere venir", ["paloma"]),  # no sentence of the corpus begins with "paloma": here a subject
        ("la paloma no quiere venir", []),  # after its article: the word
        ("dolores se fue a casa", ["dolores"]),
        ("Hoy llega beatriz.", []),  # written with capitals, a lowercase word is a name only after a cue
        ("hoy llega beatriz", ["beatriz"]),  # typed, lowercase is how names come
        ("conoces a ana lucia", ["ana lucia"]),  # typed, a first name after a first name
        ("vivimos en villanueva de arosa", ["villanueva de arosa"]),  # typed, names joined by "de"
    ],
)
def test_a_subject_before_a_clitic_and_typed_runs_are_names(guard, text, originals):
    assert [original for original, _ in swaps(guard, text)] == originals


def test_a_name_written_with_capitals_is_put_back_as_written(guard):
    for text, back in [
        ("Visité Boulogne-sur-Mer.", "Boulogne-sur-Mer"),
        ("visite boulogne-sur-mer", "Boulogne-sur-Mer"),
    ]:
        guarded = guard.protect(text)
        assert guarded.restore(guarded.read_as)[0] == text.replace(guarded.swaps[0].original, back)
