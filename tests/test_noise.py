"""Typing noise on the source side (data/noise.py), drawn anew each epoch (data/batch.TrainingSet), and held-out lists."""

from __future__ import annotations

import random

import pytest

from data.batch import TrainingSet, encode_pairs
from data.corpus import Pair
from data.noise import NoiseConfig, add_noise, drop_commas, typed
from data.tokenizer import Tokenizer, train_tokenizer
from model.config import ConfigError
from model.typed_config import MAX_SEED
from training.train_config import load_train_config

PAIRS = [
    Pair("¡Hola, mundo!", "Hello, world!"),
    Pair("¿Cómo estás?", "How are you?"),
    Pair("Él está aquí.", "He is here."),
    Pair("El niño come pan.", "The boy eats bread."),
] * 10


@pytest.fixture(scope="module")
def tiny_tokenizer() -> Tokenizer:
    return train_tokenizer(PAIRS, vocab_size=60, extra_src=[typed(p.src) for p in PAIRS])


def test_typed_is_lowercase_without_accents_inverted_marks_or_final_punctuation() -> None:
    assert typed("¡Hola, mundo!") == "hola mundo"
    assert typed("¿Cómo estás?") == "como estas"
    assert typed("El niño pequeño...") == "el nino pequeno"
    for p in PAIRS:
        out = typed(p.src)
        assert out == out.lower() and not set(out) & set("¿¡.,?!áéíóúñü")


def test_no_noise_keeps_every_sentence_and_full_noise_is_typed() -> None:
    rng = random.Random(0)
    assert [add_noise(p.src, NoiseConfig(p=0.0), rng) for p in PAIRS] == [p.src for p in PAIRS]
    full = NoiseConfig(
        p=1.0, drop_final_punct=1.0, drop_inverted=1.0, lowercase=1.0, strip_accents=1.0, drop_commas=1.0
    )
    assert [add_noise(p.src, full, rng) for p in PAIRS] == [typed(p.src) for p in PAIRS]


def test_commas_between_words_go_and_decimal_commas_stay() -> None:
    assert drop_commas("Sí, claro, ven.") == "Sí claro ven."
    assert drop_commas("Pesa 3,5 kilos, más o menos.") == "Pesa 3,5 kilos más o menos."
    only_commas = NoiseConfig(p=1.0, drop_final_punct=0, drop_inverted=0, lowercase=0, strip_accents=0, drop_commas=1)
    assert add_noise("Hola, mundo.", only_commas, random.Random(0)) == "Hola mundo."


def test_without_the_comma_transform_the_draws_are_those_of_older_runs() -> None:
    """A config from before drop_commas existed takes five draws per sentence, so its epochs are unchanged;
    with the transform on it takes six, the same number for every sentence."""
    for noise, draws in ((NoiseConfig(p=0.5), 5), (NoiseConfig(p=0.5, drop_commas=0.3), 6)):
        rng, reference = random.Random(7), random.Random(7)
        for p in PAIRS:
            add_noise(p.src, noise, rng)
            for _ in range(draws):
                reference.random()
        assert rng.random() == reference.random()


def test_epochs_are_seeded_different_and_only_the_source_changes(tiny_tokenizer: Tokenizer) -> None:
    noise = NoiseConfig(p=0.5)
    data = TrainingSet(PAIRS, tiny_tokenizer, 64, noise, seed=3)
    clean = encode_pairs(PAIRS, tiny_tokenizer, 64)
    epoch0, again, epoch1 = data.epoch(0), TrainingSet(PAIRS, tiny_tokenizer, 64, noise, seed=3).epoch(0), data.epoch(1)
    assert epoch0 == again  # what --resume and every process rebuild
    assert epoch0 != epoch1 and epoch0 != clean  # a new draw each epoch
    assert [e.tgt for e in epoch0] == [e.tgt for e in clean]  # the English side is never noised
    assert 0 < sum(a.src != b.src for a, b in zip(epoch0, clean, strict=True)) < len(PAIRS)


def test_subword_sampling_takes_every_seed_torch_takes(tiny_tokenizer: Tokenizer) -> None:
    """SentencePiece's generator takes 32 bits: a seed above 4,294 (times 1,000,003) was a TypeError mid-run."""
    for seed in (5000, MAX_SEED):
        assert len(TrainingSet(PAIRS, tiny_tokenizer, 64, sampling_alpha=0.1, seed=seed).epoch(7)) == len(PAIRS)


def test_noise_options_are_checked_and_nested_overrides_reach_them() -> None:
    config = load_train_config(None, ["data.noise.p=0.5", "data.noise.lowercase=0.2"])
    assert config.data.noise == NoiseConfig(p=0.5, lowercase=0.2)
    with pytest.raises(ConfigError, match=r"data\.noise\.p"):
        load_train_config(None, ["data.noise.p=1.5"])
    with pytest.raises(ConfigError, match=r"data\.noise\.q"):
        load_train_config(None, ["data.noise.q=0.1"])
