"""Entity swaps: names and numbers found in the corpus, replaced on both sides alike, seeded per epoch, and the
copy check's names never drawn for training."""

from __future__ import annotations

import random

from data.batch import TrainingSet
from data.entities import EntityConfig, EntityFinder, EntityPool, held_out, pseudo_word, substitute
from data.noise import NoiseConfig
from data.readers import Pair
from data.tokenizer import Tokenizer, train_tokenizer

CORPUS = [
    Pair("Tom es alto.", "Tom is tall."),
    Pair("Creo que Tom está en Boston.", "I think Tom is in Boston."),
    Pair("Mary dijo que Tom se fue.", "Mary said that Tom left."),
    Pair("No, gracias.", "No, thanks."),
    Pair("No lo sé.", "I do not know."),
    Pair("no quiero ir", "I don't want to go."),
    Pair("Tengo 25 años.", "I'm 25 years old."),
    Pair("Ella lo vio a él.", "She saw him."),
    Pair("Tom perdió su libro.", "Tom lost his book."),
    Pair("Tom dijo que él vendría.", "Tom said he would come."),
    Pair("Tom se lavó la cara.", "Tom washed his face."),
    Pair("Mary perdió su bolso.", "Mary lost her bag."),
    Pair("Mary dijo que ella vendría.", "Mary said she would come."),
    Pair("Mary se lavó la cara.", "Mary washed her face."),
    Pair("Tom le dio a Mary un libro.", "Tom gave Mary a book."),
]


def finder() -> EntityFinder:
    return EntityFinder.from_pairs(CORPUS, EntityPool.build(held=None))


def test_names_and_numbers_are_found_in_the_corpus_not_common_words() -> None:
    f = finder()
    assert {"Tom", "Boston", "Mary"} <= f.names and "No" not in f.names
    assert f.people["Tom"] == "male" and f.people["Mary"] == "female"  # from the English's he / she
    assert f.shared(CORPUS[1]) == ["Tom", "Boston"] and f.shared(CORPUS[6]) == ["25"]
    assert f.shared(CORPUS[3]) == [] and f.shared(CORPUS[7]) == []


def test_a_swap_replaces_each_entity_alike_on_both_sides_and_nothing_else() -> None:
    f, pool, rng = finder(), EntityPool.build(), random.Random(3)
    for pair in CORPUS:
        new, count = substitute(pair, f, pool, rng, EntityConfig(p=1.0))
        assert count == len(f.shared(pair))
        src_rest = [w for w in pair.src.split() if not any(e in w for e in f.shared(pair))]
        assert all(w in new.src.split() for w in src_rest)
        if count:  # what went into the source went into the target
            added = set(new.src.replace(".", " ").split()) - set(pair.src.replace(".", " ").split())
            assert added <= set(new.tgt.replace(".", " ").replace("'", " ").split())


def test_p_zero_swaps_nothing_and_p_one_swaps_every_pair_with_an_entity() -> None:
    f, pool = finder(), EntityPool.build()
    assert all(substitute(p, f, pool, random.Random(1), EntityConfig(p=0.0)) == (p, 0) for p in CORPUS)
    swapped = [substitute(p, f, pool, random.Random(i), EntityConfig(p=1.0))[1] > 0 for i, p in enumerate(CORPUS)]
    assert swapped == [bool(f.shared(p)) for p in CORPUS]


def test_the_copy_checks_names_are_never_drawn_for_training() -> None:
    train, held = EntityPool.build(), EntityPool.build(held=True)
    for a, b in ((train.male, held.male), (train.female, held.female), (train.places, held.places)):
        assert a and b and not set(a) & set(b)
    assert all(held_out(n) for n in held.male) and not any(held_out(n) for n in train.male)
    assert {"Ñ" in n or any(ch in n for ch in "áéíóú") for n in train.male + train.female} == {True, False}


def test_pseudo_words_look_like_names() -> None:
    rng = random.Random(0)
    words = [pseudo_word(rng) for _ in range(50)]
    assert all(w[0].isupper() and w[1:].islower() and w.isalpha() for w in words) and len(set(words)) > 40


def test_epochs_are_seeded_and_the_noise_keeps_its_draws() -> None:
    pairs = CORPUS * 5
    tiny_tokenizer: Tokenizer = train_tokenizer(pairs, vocab_size=80)
    noise = NoiseConfig(p=0.5)
    both = TrainingSet(pairs, tiny_tokenizer, 64, noise, seed=3, entities=EntityConfig(p=0.5))
    again = TrainingSet(pairs, tiny_tokenizer, 64, noise, seed=3, entities=EntityConfig(p=0.5))
    plain = TrainingSet(pairs, tiny_tokenizer, 64, noise, seed=3)
    assert both.epoch(0) == again.epoch(0) and both.epoch_pairs(0) != both.epoch_pairs(1)
    swapped, count = both.epoch_pairs(0)
    assert count > 0 and len(swapped) == len(pairs)
    for new, old, a, b in zip(swapped, pairs, both.epoch(0), plain.epoch(0), strict=True):
        if new == old:  # an untouched pair gets exactly the noise it would get without swaps
            assert a == b
