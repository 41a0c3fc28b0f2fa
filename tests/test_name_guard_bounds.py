"""The name guard's work is bounded (translate/name_guard.py, translate/translator.py): a long pool of stand-ins
does not make a sentence slow, a retry decodes only the sentences another set of stand-ins can help, and a word
holding a combining accent or an invisible format character is swapped whole."""

from __future__ import annotations

import random
import time
import unicodedata
from dataclasses import replace

import pytest
from test_name_guard import EVERYONE, LISTS, EchoTranslator, corpus

from translate.name_guard import WORD, NameGuard, build
from translate.translator import RETRIED_SWAPS

SEED = 20261206


@pytest.fixture(scope="module")
def guard() -> NameGuard:
    return build(corpus(), "es", LISTS, EVERYONE)


def test_a_long_pool_of_number_stand_ins_does_not_make_a_sentence_slow(guard: NameGuard) -> None:
    """Each number once took a pass over the pool for every stand-in in it: quadratic in the pool's length."""
    long = replace(guard, stand_ins={**guard.stand_ins, "number": tuple(str(n) for n in range(1000, 4000))})
    text = "Tengo " + ", ".join(str(n) for n in range(51, 61)) + " libros."
    start = time.process_time()
    guarded = long.protect(text)
    assert time.process_time() - start < 1.0 and len(guarded.swaps) == 10


def test_a_sentence_of_many_swaps_is_not_tried_again_with_other_stand_ins(guard: NameGuard) -> None:
    """Another set of stand-ins seldom saves a sentence of many names: it is translated as typed at once (guarded
    once, then as typed: 2 decodings, not 4)."""
    text = "Me llamo Ana, Beatriz, Lucía, Jorge y Carlos y vivo en Lima."
    swaps = guard.protect(text).swaps
    assert len(swaps) > RETRIED_SWAPS and swaps[-1].original == "Lima"
    engine = EchoTranslator(guard, drop=swaps[-1].stand_in)  # the model loses the last one
    result = engine.translate(text)
    assert result.guarded is None and f"{swaps[-1].stand_in} (read for Lima) is missing" in result.guard_note
    assert len(engine.seen) == 2 and engine.seen[-1] == text


def test_a_sentence_read_the_same_on_every_try_is_decoded_once_under_the_guard(guard: NameGuard) -> None:
    one = replace(guard, stand_ins={**guard.stand_ins, "number": ("30",)})  # every try reads 25 as 30
    engine = EchoTranslator(one, drop="30")
    result = engine.translate("Tengo 25 libros.")
    assert engine.seen == ["Tengo 30 libros.", "Tengo 25 libros."] and result.text == "Tengo 25 libros."


def test_a_word_with_a_format_character_or_a_combining_accent_is_swapped_whole(guard: NameGuard) -> None:
    """Once "An\\u200ba" read as "Mary\\u200ba" (the model kept "An"), "Ca\\u0301diz" as "Boston\\u0301diz"."""
    guarded = guard.protect("Me llamo An\u200ba y vivo en Ca\u0301diz con Jose\u0301.")
    assert [s.original for s in guarded.swaps] == ["An\u200ba", "Cádiz", "José"]
    assert guarded.restore(guarded.read_as) == ("Me llamo An\u200ba y vivo en Cádiz con José.", "")
    marked = guard.protect("¿Conoces a \u200fBeatriz\u200e?")  # direction marks around a name
    assert [s.original for s in marked.swaps] == ["Beatriz"]


def test_no_swap_splits_a_word_whatever_invisible_or_combining_characters_it_holds(guard: NameGuard) -> None:
    rng = random.Random(SEED)
    inserts = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u00ad", "\u0301", "\u0331", "\U000e0041"]
    for _ in range(300):
        names = [rng.choice(["Ana", "Lucía", "Beatriz", "José", "Carlos", "Sevilla", "Lima", "Cádiz", "Kenji"])]
        names.append(rng.choice(["Sevilla", "Lima", "Cádiz", "Jorge", "Pablo"]))
        for i, name in enumerate(names):
            if rng.random() < 0.3:
                name = unicodedata.normalize("NFD", name)
            at = rng.randint(0, len(name))
            names[i] = name[:at] + rng.choice(inserts) + name[at:]
        text = f"Me llamo {names[0]} y vivo en {names[1]}."
        guarded = guard.protect(text)
        nfc = unicodedata.normalize("NFC", text)
        words = [m.span() for m in WORD.finditer(nfc)]
        for swap in guarded.swaps:  # a swap begins and ends where words do, and never inside a word
            start = nfc.index(swap.original)
            assert not nfc[start - 1].isalnum() and not unicodedata.category(nfc[start - 1]).startswith("M"), text
            end = start + len(swap.original)
            assert end == len(nfc) or not (nfc[end].isalnum() or unicodedata.category(nfc[end]).startswith("M"))
            assert any(a == start for a, _ in words) and any(b == end for _, b in words), (text, swap)
        assert guarded.restore(guarded.read_as)[0] in (nfc, None), text
