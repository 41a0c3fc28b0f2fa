"""SentencePiece training: special ids, joint vs separate models, and an exact round trip on normalised text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from data.corpus import Pair, normalise
from data.tokenizer import Tokenizer, train_tokenizer

WORDS = {"niña": "girl", "canción": "song", "árbol": "tree", "pingüino": "penguin", "año": "year", "café": "coffee"}
ADJECTIVES = {"pequeña": "small", "nueva": "new", "vieja": "old", "bonita": "pretty"}


def toy_pairs(n: int, seed: int = 0) -> list[Pair]:
    """Spanish–English pairs with accents, ñ, ü and punctuation (``¿La niña pequeña? 3`` -> ``The small girl? 3``)."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        noun, adjective = rng.choice(list(WORDS)), rng.choice(list(ADJECTIVES))
        pairs.append(Pair(f"¿La {noun} {adjective}? {i % 13}", f"The {ADJECTIVES[adjective]} {WORDS[noun]}? {i % 13}"))
    return pairs


@pytest.fixture(scope="module", params=[True, False], ids=["joint", "separate"])
def tokenizer(request: pytest.FixtureRequest) -> Tokenizer:
    return train_tokenizer(toy_pairs(300), vocab_size=120, joint=request.param)


def test_special_ids_are_the_ones_the_model_expects(tokenizer: Tokenizer) -> None:
    for processor in (tokenizer.src, tokenizer.tgt):
        assert (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id()) == (0, 1, 2, 3)


def test_joint_shares_one_model_and_separate_does_not(tokenizer: Tokenizer) -> None:
    assert tokenizer.joint == (tokenizer.src is tokenizer.tgt)
    src_pieces = set(tokenizer.src_pieces(list(range(tokenizer.src.get_piece_size()))))
    tgt_pieces = set(tokenizer.tgt_pieces(list(range(tokenizer.tgt.get_piece_size()))))
    assert "ñ" in "".join(src_pieces)
    assert ("ñ" in "".join(tgt_pieces)) == tokenizer.joint  # a separate English model never saw Spanish letters


def test_round_trip_on_normalised_text(tokenizer: Tokenizer) -> None:
    unseen = ["The  old penguin?   12", "The pretty year coffee tree? 0"]  # new word combinations, extra spaces
    for text in [p.tgt for p in toy_pairs(50, seed=1)] + [normalise(t) for t in unseen]:
        ids = tokenizer.encode_tgt(text)
        assert ids[-1] == 3 and not {0, 1, 2} & set(ids)  # EOS last; no PAD, UNK or BOS inside
        assert tokenizer.decode_tgt(ids) == text
    for text in [p.src for p in toy_pairs(50, seed=2)] + ["¿La café nueva? 12"]:
        ids = tokenizer.encode_src(text)
        assert ids[-1] == 3 and not {0, 1, 2} & set(ids)
        assert tokenizer.src.decode(ids[:-1]) == text


def test_saved_and_loaded_tokenizer_encodes_the_same(tokenizer: Tokenizer, tmp_path: Path) -> None:
    tokenizer.save(tmp_path)
    loaded = Tokenizer.load(tmp_path)
    assert loaded.joint == tokenizer.joint
    text = "The small song? 4"
    assert loaded.encode_tgt(text) == tokenizer.encode_tgt(text)
    assert loaded.encode_src("¿La canción vieja? 4") == tokenizer.encode_src("¿La canción vieja? 4")
