"""jobs.corpus_languages: the languages of a corpus's sides proposed from its text, and the page's one-line warning."""

from jobs.corpus_languages import MIN_CONFIDENCE, code_problem, language_warning, propose_columns

SPANISH = [
    "Nos vemos el lunes en la escuela.",
    "Tengo hambre.",
    "¿Dónde está la estación de tren?",
    "Me gusta leer libros por la noche.",
    "Ella no habla inglés.",
]
ENGLISH = [
    "See you Monday at school.",
    "I'm hungry.",
    "Where is the train station?",
    "I like reading books at night.",
    "She doesn't speak English.",
]


def test_proposes_each_side_from_its_text() -> None:
    src, tgt, confidence = propose_columns(list(zip(SPANISH, ENGLISH, strict=True)))
    assert (src, tgt) == ("es", "en") and confidence >= MIN_CONFIDENCE
    assert propose_columns(list(zip(ENGLISH, SPANISH, strict=True)))[:2] == ("en", "es")


def test_two_sides_in_one_language_still_get_two_languages() -> None:
    src, tgt, _ = propose_columns(list(zip(SPANISH, SPANISH, strict=True)))
    assert src != tgt and "es" in (src, tgt)


def test_no_text_no_proposal() -> None:
    assert propose_columns([]) == ("", "", 0.0)
    assert propose_columns([("123", "...")]) == ("", "", 0.0)


def test_warns_in_one_line_when_swapped() -> None:
    line = language_warning(("es", "en"), ("en", "es", 0.99))
    assert line is not None and "swapped" in line and "\n" not in line
    assert language_warning(("es", "en"), ("es", "en", 0.99)) is None
    assert language_warning(("es", "en"), ("en", "es", MIN_CONFIDENCE / 2)) is None  # unsure: silent
    assert language_warning(("pt-BR", "en"), ("pt", "en", 0.99)) is None  # a region is the same language


def test_names_another_language() -> None:
    line = language_warning(("es", "en"), ("fr", "en", 0.99))
    assert line is not None and "French" in line and "Spanish" in line


def test_language_codes() -> None:
    assert code_problem("es") is None and code_problem("pt-BR") is None and code_problem("ast") is None
    for bad in ("", "Spanish", "e", "es_ES!"):
        assert code_problem(bad) is not None
