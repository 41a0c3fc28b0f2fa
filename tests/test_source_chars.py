"""Characters the source vocabulary lacks: a plain form it has, or left out and named (data/source_chars.py)."""

from __future__ import annotations

import random

import pytest

from data.corpus import Pair
from data.source_chars import Reading, plain_form, readable
from data.tokenizer import train_tokenizer
from lab.attention.translate_with_maps import MAX_NAMED, TextTranslation, notices
from tests.conftest import toy_pairs


def ascii_only(ch: str) -> bool:
    return ch.isascii()


def test_a_text_of_known_characters_is_read_as_it_is() -> None:
    text = "¿Dónde está Zoë? “Hola” — 😀"
    assert readable(text, lambda ch: True) == Reading(text, ())


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("“Hola”, dijo Zoë…", '"Hola", dijo Zoe...'),
        ("las 5–6 ‘ya’", "las 5-6 'ya'"),
        ("ﬁn de Ｈola", "fin de Hola"),  # compatibility forms (NFKD)
    ],
)
def test_a_character_the_vocabulary_lacks_is_read_in_its_plain_form(text: str, read: str) -> None:
    assert readable(text, ascii_only) == Reading(read, ())


@pytest.mark.parametrize(
    ("text", "read", "left_out"),
    [
        ("Tengo hambre 😀", "Tengo hambre ", ("😀",)),
        ("hola😀mundo", "hola mundo", ("😀",)),  # a space where the emoji parted two words
        ("😀😀 ¡ya! 🚀😀", " ¡ya! ", ("😀", "🚀")),  # each character once, in order
        ("中文", "", ("中", "文")),
    ],
)
def test_a_character_without_a_known_form_is_left_out_and_named(text: str, read: str, left_out: tuple) -> None:
    known = {*"Tengo hambre ¡ya!mudl"}.__contains__
    assert readable(text, known) == Reading(read, left_out)


def test_a_plain_form_the_vocabulary_also_lacks_is_left_out() -> None:
    assert readable("“a”", lambda ch: ch == "a") == Reading("a", ("“", "”"))
    assert readable("[1]", lambda ch: ch in "()1") == Reading("(1)", ())
    assert plain_form("😀") == "😀"  # no plain form of its own: never "replaced" by itself


def test_on_random_text_every_character_read_is_known_and_every_one_left_out_is_named() -> None:
    rng = random.Random(0)
    alphabet = "aAbñÑéëz19 ,.¿?“”’–…😀@#中"
    known = {*"aAbñÑéz19 ,.¿?\"'-e"}.__contains__
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        reading = readable(text, known)
        assert all(known(ch) for ch in reading.text)
        assert set(reading.left_out) == {ch for ch in text if not known(ch) and not all(map(known, plain_form(ch)))}
        kept = [ch for ch in text if ch not in reading.left_out]
        assert reading.text.replace(" ", "") == "".join(ch if known(ch) else plain_form(ch) for ch in kept).replace(
            " ", ""
        )  # nothing else changes (spaces aside)


def test_a_tokenizer_never_reads_unk_and_says_what_it_left_out() -> None:
    tok = train_tokenizer([Pair(s, t) for s, t in toy_pairs(300)], 80)
    unk = tok.src.unk_id()
    text = "el gato 😀 “rojo”"
    assert unk in tok.src.encode(text)  # read raw, the vocabulary lacks these characters
    assert unk not in tok.encode_src(text)
    reading = tok.src_reading(text)
    assert "😀" in reading.left_out and ("“" in reading.left_out) == (not tok.src_knows('"'))
    assert tok.encode_src(text) == tok.src.encode(reading.text) + [tok.src.eos_id()]
    assert tok.src_reading("el gato rojo").left_out == ()


def test_a_case_markup_vocabulary_keeps_the_capitals_it_lowers() -> None:
    """Such a vocabulary holds lowercase letters only; "El Gato" is read "el⇧ gato⇧", nothing left out."""
    tok = train_tokenizer([Pair(s.lower(), t) for s, t in toy_pairs(300)], 80, case_markup=True)
    assert not tok.src_knows("G")
    reading = tok.src_reading("El Gato rojo 3.")
    assert reading == Reading("el⇧ gato⇧ rojo 3.", ())


def test_the_page_names_left_out_characters_without_passing_them_through_markdown() -> None:
    result = TextTranslation("x", [], 64, left_out=("😀", "*", "<"))
    (notice,) = notices(result)
    assert "😀 (GRINNING FACE)" in notice and "ASTERISK" in notice and "LESS-THAN SIGN" in notice
    assert "*" not in notice and "<" not in notice
    many = TextTranslation("x", [], 64, left_out=tuple(chr(0x1F600 + i) for i in range(MAX_NAMED + 5)))
    (notice,) = notices(many)
    assert notice.count("(") == MAX_NAMED and "and 5 more" in notice
