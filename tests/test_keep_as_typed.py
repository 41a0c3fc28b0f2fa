"""Keep this as typed: a span the user wraps in [[ ]] is read by the model as one of the guard's stand-ins, its marks
never reach it, and it comes back exactly as typed, or the translation says it could not (translate/name_guard.py)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from test_name_guard import EVERYONE, LISTS, EchoTranslator, corpus

from translate.cli import main
from translate.name_guard import MarkError, build, marked, unmarked
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

MARKS = DecodeOptions(marks=True)  # what a user types: the page and the CLI read [[ ]]; a corpus's line is literal
WORDS = ["el", "gato", "vive", "en", "con", "ana", "Rosa", "Tom", "XK-9", "beta", "1234", "07:05", "a*b", "¿Sí?"]


@pytest.fixture(scope="module")
def guard():
    return build(corpus(), "es", LISTS, EVERYONE)


def sentence(rng: random.Random) -> tuple[str, list[str]]:
    """A sentence of WORDS with some runs of them marked [[ ]], and the runs marked."""
    words, typed, spans = rng.choices(WORDS, k=rng.randint(1, 8)), [], []
    i = 0
    while i < len(words):
        n = rng.randint(1, 3) if rng.random() < 0.3 else 0
        if n:
            spans.append(" ".join(words[i : i + n]))
            typed.append(f"[[{spans[-1]}]]")
        else:
            typed.append(words[i])
        i += max(n, 1)
    return " ".join(typed) + rng.choice(["", ".", " ?"]), spans


def test_marked_spans_come_back_exactly_and_their_marks_never_reach_the_model(guard) -> None:
    rng = random.Random(67)
    for _ in range(300):
        typed, spans = sentence(rng)
        engine = EchoTranslator(guard)
        result = engine.translate(typed, MARKS)
        assert not any("[[" in t or "]]" in t for t in engine.seen), typed
        assert result.not_kept == [] and result.source == typed, typed
        assert [s.original for s in result.guarded.swaps if s.kept] == spans if spans else True, typed
        rest = result.text
        for span in spans:  # each in its place, exactly as typed (never capitalised: "ana" stays "ana")
            assert span in rest, (typed, result.text)
            rest = rest.replace(span, "", 1)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("[[Rosa es mi hermana.", "[[ at character 1: expected ]] after the words to keep"),
        ("Rosa]] es mi hermana.", "]] at character 5: expected a [[ before it"),
        ("[[Rosa [[es]] mi", "[[ at character 8: expected ]] to close the [[ before it first"),
        ("[[ ]] es mi hermana.", "]] at character 4: expected words to keep between [[ and ]]"),
    ],
)
def test_marks_that_do_not_pair_are_refused_naming_what_was_expected(guard, typed: str, expected: str) -> None:
    with pytest.raises(MarkError, match=expected.replace("[", r"\[")):
        EchoTranslator(guard).translate(typed, MARKS)
    engine = EchoTranslator(guard)
    engine.translate(typed)  # without marks (a corpus's line): read literally, never refused
    assert "[[" in engine.seen[-1] or "]]" in engine.seen[-1]
    assert unmarked("Un [[ XK-9 ]] y [[3]].") == ("Un  XK-9  y 3.", [(4, 8), (12, 13)])
    assert marked("[[a]] b [[c d]]") == ["a", "c d"]


def test_a_span_the_model_drops_or_a_model_without_a_guard_says_it_was_not_kept(guard) -> None:
    one = replace(guard, stand_ins={**guard.stand_ins, "male": ("Tom",)})
    result = EchoTranslator(one, drop="Tom").translate("Vive con [[Pepe]].", MARKS)
    assert (
        result.not_kept == ["Pepe"] and result.text == "Vive con Pepe." and "Tom (read for Pepe)" in result.guard_note
    )
    engine = EchoTranslator(guard)
    engine.guard = None
    result = engine.translate("Vive con [[Pepe]].", MARKS)
    assert engine.seen == ["Vive con Pepe."] and result.not_kept == ["Pepe"]
    assert "needs the name guard (this model has none)" in result.guard_note


def test_the_shipped_model_keeps_rosa_from_the_command_line_and_in_another_language(capsys) -> None:
    assert main(["[[Rosa]] es mi hermana.", "El código [[XK-9 beta]] no funciona."]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "Rosa is my sister." and "XK-9 beta" in out.splitlines()[1]  # alone: "rose is…"
    assert "read Rosa → Tom (kept as you asked)" in err
    with pytest.raises(SystemExit) as refused:
        main(["Hola.", "[[Rosa es mi hermana."])
    assert refused.value.code == 2 and "line 2: [[ at character 1: expected ]]" in capsys.readouterr().err
    result = Translator.load(DEFAULT_MODEL).translate("[[Rosa]] est ma soeur et elle habite à Paris.", MARKS)
    assert [s.original for s in result.guarded.swaps] == ["Rosa"] and result.not_kept == []  # Paris: unguarded
    assert "Rosa" in result.text and "name guard off for this sentence" in result.guard_note
    alone = Translator.load(DEFAULT_MODEL).translate("[[Rosa]] es.", DecodeOptions(name_guard=False, marks=True))
    assert alone.not_kept == ["Rosa"] and "(switched off)" in alone.guard_note
