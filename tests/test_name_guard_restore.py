"""Putting the originals back (translate/name_guard.py ``Guarded.restore``): one pass over the output, whole tokens
only, nothing put back read again; a stand-in missing, repeated or invented gives the sentence up; an n-best
candidate is restored the same way or left out."""

from __future__ import annotations

import functools
import random
from collections import Counter

import pytest
from test_name_guard import EVERYONE, LISTS, EchoTranslator, corpus

from translate.name_guard import Guarded, NameGuard, Swap, build, capitalised, whole_tokens
from translate.translator import Candidate, Translation, guarded_result

SEED = 20261206
SENTENCES = 10_000
POOLS = {
    "male": ("Tom", "John"),
    "female": ("Mary", "Alice"),
    "place": ("Boston", "Chicago"),
    "number": ("30", "10", "100", "1939"),
}
ORIGINALS = {  # originals holding stand-ins: inside a name, after an apostrophe, in a time, a price, a year
    "male": ("Ana-Mary", "O'Mary", "john-tom", "Bostonio", "Jean-John"),
    "female": ("Mary-Alice", "o'alice", "Maryam", "Beatriz", "Ana"),
    "place": ("Chicago-Boston", "San Tom", "Alice Springs", "Sevilla"),
    "number": ("10:30", "7,30", "3,30", "1930", "30.000", "10/30", "100,10", "45"),
}
TRAPS = ("12:30", "9,10", "1910", "100,5", "Jo-Mary", "D'Alice", "Tomás")  # holding stand-ins, never whole
FILLER = ("I", "saw", "and", "in", "the", "at", "euros", *TRAPS)  # the model's own words: none of them an original
ANY_ORIGINAL = whole_tokens(
    frozenset(o if k == "number" else capitalised(o) for k, os in ORIGINALS.items() for o in os)
)
ANY_STAND_IN = whole_tokens(frozenset(s for pool in POOLS.values() for s in pool))
BEFORE, AFTER = ("", "", "(", "¿", '"', "$"), ("", "", ".", ",", "'s", ")", "?", "%", "!", "-year-old")


def guarded_sentence(rng: random.Random) -> Guarded:
    """A Guarded record as ``NameGuard.protect`` makes one: up to five swaps (an original may repeat), each with its
    own stand-in of its kind (or of any name kind when those are used up), and the rest of the pools unused."""
    left = {kind: list(pool) for kind, pool in POOLS.items()}
    swaps = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(list(POOLS))
        pool = left[kind] or (left["male"] + left["female"] + left["place"] if kind != "number" else [])
        if not pool:
            continue
        stand_in = rng.choice(pool)
        for names in left.values():
            if stand_in in names:
                names.remove(stand_in)
        swaps.append(Swap(rng.choice(ORIGINALS[kind]), stand_in, kind))
    swaps = swaps or [Swap("10:30", "30", "number")]
    unused = tuple(s for pool in POOLS.values() for s in pool if s not in {w.stand_in for w in swaps})
    source = " y ".join(s.original for s in swaps)
    return Guarded(source, " y ".join(s.stand_in for s in swaps), tuple(swaps), unused)


def output_of(guarded: Guarded, rng: random.Random) -> tuple[list[str], list[str | None]]:
    """An output the model might write: words (some holding stand-ins, never whole), and each stand-in once with
    punctuation around it; and beside each piece what it must read once restored (None: left as it is)."""
    pieces = rng.choices(FILLER, k=rng.randint(0, 6))
    back: list[str | None] = [None] * len(pieces)
    for stand_in, original in guarded.originals.items():
        at = rng.randint(0, len(pieces))
        before, after = rng.choice(BEFORE), rng.choice(AFTER)
        pieces.insert(at, f"{before}{stand_in}{after}")
        back.insert(at, f"{before}{original}{after}")
    return pieces, back


def spoiled(guarded: Guarded, pieces: list[str], rng: random.Random) -> list[str]:
    """``pieces`` with one stand-in dropped, written twice, or one the guard did not use written whole."""
    how = rng.choice(["drop", "twice", "invent"] if guarded.unused else ["drop", "twice"])
    where = [i for i, p in enumerate(pieces) if any(s.stand_in in p for s in guarded.swaps) and p not in FILLER]
    at = rng.choice(where)
    if how == "drop":
        return pieces[:at] + pieces[at + 1 :]
    if how == "twice":
        return [*pieces, pieces[at]]
    return [*pieces, rng.choice(guarded.unused) + rng.choice(AFTER)]


def test_every_original_comes_back_exactly_as_often_as_in_the_source_and_no_stand_in_stays() -> None:
    """Over 10,000 generated sentences and their n-best lists: a candidate with every stand-in once comes back as
    written with each original in its stand-in's place (so each as often as in the source, never a stand-in, never
    an original changed by a later one); a spoiled candidate is left out; a spoiled best gives the sentence up."""
    rng = random.Random(SEED)
    given_up = 0
    for _ in range(SENTENCES):
        guarded = guarded_sentence(rng)
        candidates, expected = [], []
        for _ in range(rng.randint(1, 3)):
            pieces, back = output_of(guarded, rng)
            if rng.random() < 0.3:
                candidates.append(" ".join(spoiled(guarded, pieces, rng)))
                expected.append(None)
            else:
                candidates.append(" ".join(pieces))
                expected.append(" ".join(b if b is not None else p for p, b in zip(pieces, back, strict=True)))
        for text, want in zip(candidates, expected, strict=True):
            assert guarded.restore(text)[0] == want, (guarded, text)
        result = Translation(guarded.read_as, [], False, [Candidate([], 0.0, 0.0, text=t) for t in candidates])
        restored, why = guarded_result(guarded, result)
        if expected[0] is None:
            assert restored is None and why
            given_up += 1
            continue
        assert [c.text for c in restored.candidates] == [e for e in expected if e is not None]
        assert restored.unrestored == expected.count(None) and restored.source == guarded.source
        originals = Counter(capitalised(s.original) if s.kind != "number" else s.original for s in guarded.swaps)
        for text in (c.text for c in restored.candidates):
            found = list(ANY_ORIGINAL.finditer(text))
            assert Counter(m.group() for m in found) == originals, (guarded, text)
            inside = [m.span() for m in found]  # "Ana-Mary", "San Tom" hold stand-ins
            for m in ANY_STAND_IN.finditer(text):
                assert any(a <= m.start() and m.end() <= b for a, b in inside), (guarded, text)
    assert 0.2 * SENTENCES < given_up < 0.4 * SENTENCES  # both paths were taken, many times


@pytest.fixture(scope="module")
def guard() -> NameGuard:
    return build(corpus(), "es", LISTS, EVERYONE)


@pytest.mark.parametrize(
    "text, kept",
    [
        ("El tren sale a las 10:30 y tarda 45 minutos.", ["10:30", "45"]),  # was "a las 10:45 … 45"
        ("Cuesta 7,30 euros y pesa 38 kilos.", ["7,30", "38"]),  # was "7,38"
        ("Pagué 3,30 euros por 45 manzanas.", ["3,30", "45"]),  # was "3,45"
        ("Vi a Ana-Mary y a Beatriz en el parque.", ["Ana-Mary", "Beatriz"]),  # was "Ana-Beatriz y Beatriz"
        ("Vi a O'Mary y a Beatriz.", ["O'Mary", "Beatriz"]),  # was "O'Beatriz"
    ],
)
def test_an_original_put_back_is_never_read_again_for_a_later_stand_in(
    guard: NameGuard, text: str, kept: list[str]
) -> None:
    guarded = guard.protect(text)
    assert all(original in [s.original for s in guarded.swaps] for original in kept)
    restored, why = guarded.restore(guarded.read_as)  # a model that copies what it read
    back = {s.original: s.back or s.original for s in guarded.swaps}  # "7,30" comes back as English writes it
    expected = functools.reduce(lambda t, o: t.replace(o, back[o]), kept, text)
    assert why == "" and restored.lower() == expected.lower()  # a lowercase word read as a name comes back capitalised
    assert all(whole_tokens(frozenset([back[o]])).findall(restored) == [back[o]] for o in kept)


def test_a_stand_in_the_sentence_did_not_use_gives_it_up_unless_a_name_left_to_the_model_explains_it(
    guard: NameGuard,
) -> None:
    guarded = guard.protect("Vi a Beatriz en Sevilla.")
    assert "John" in guarded.unused and "Tom" in guarded.unused
    swapped = {s.original: s.stand_in for s in guarded.swaps}
    output = f"I saw {swapped['Beatriz']} in {swapped['Sevilla']} with Tom."
    assert guarded.restore(output) == (None, "Tom is in the translation, though nothing was read as it")
    assert guarded.restore(output.replace("Tom", "Tomás"))[0] == "I saw Beatriz in Sevilla with Tomás."
    assert "Tom" not in guard.protect("Tom vio a Beatriz.").unused  # typed in the source: the model's to write


def test_an_n_best_candidate_holding_stand_ins_is_left_out_and_said_so() -> None:
    """ "Vi a Ana en Sevilla." at beam 8: the second candidate "I saw Tom in Boston." once kept its stand-ins."""
    guarded = Guarded(
        "Vi a Ana en Sevilla.",
        "Vi a Mary en Boston.",
        (Swap("Ana", "Mary", "female"), Swap("Sevilla", "Boston", "place")),
        ("Tom", "John", "Alice", "Chicago", "30"),
    )
    texts = ["I saw Mary in Boston.", "I saw Tom in Boston.", "I met Mary in Boston.", "", "Mary saw Mary in Boston."]
    result = Translation(guarded.read_as, [], False, [Candidate([], 0.0, 0.0, text=t) for t in texts])
    restored, _ = guarded_result(guarded, result)
    assert [c.text for c in restored.candidates] == ["I saw Ana in Sevilla.", "I met Ana in Sevilla."]
    assert restored.unrestored == 3


def test_a_translator_says_how_many_candidates_it_left_out(guard: NameGuard) -> None:
    engine = EchoTranslator(guard)
    result = engine.translate("Me llamo Ana y vivo en Sevilla.")
    assert result.unrestored == 0 and result.text == "Me llamo Ana y vivo en Sevilla."
