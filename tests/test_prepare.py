"""data.split_sentences: multi-sentence training pairs also train one pair per sentence (data.corpus.sentence_pairs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from data.corpus import CleanConfig, Pair, ReadReport, match_key, sentence_pairs
from training.prepare import load_and_split
from training.train_config import load_train_config

PAIRS = [
    Pair("¡Hola! ¿Qué tal?", "Hi! How are you?", "c.tsv:1"),
    Pair("Espera. No te vayas.", "Wait. Don't go.", "c.tsv:2"),
    Pair("Hola, Tom.", "Hi, Tom.", "c.tsv:3"),  # one sentence: nothing to add
    Pair("Lo siento. Me equivoqué.", "I'm sorry, I was wrong.", "c.tsv:4"),  # 2 against 1: which goes where?
    Pair("¿Conoce al Sr. López? Es mi jefe.", "Do you know Mr. López? He's my boss.", "c.tsv:5"),  # titles
    Pair("Sí. Me llamo Juan Carlos Pérez García.", "Yes. My name is Juan.", "c.tsv:6"),  # a ratio filter drop
]


def test_each_sentence_of_a_pair_with_as_many_sentences_on_each_side_becomes_a_pair() -> None:
    report = ReadReport()
    out = sentence_pairs(PAIRS, CleanConfig(max_ratio=1.4), [], report)
    assert [(p.src, p.tgt) for p in out] == [
        ("¡Hola!", "Hi!"),
        ("¿Qué tal?", "How are you?"),
        ("Espera.", "Wait."),
        ("No te vayas.", "Don't go."),
        ("¿Conoce al Sr. López?", "Do you know Mr. López?"),
        ("Es mi jefe.", "He's my boss."),
        ("Sí.", "Yes."),
    ]
    assert out[0].origin == "c.tsv:1 (sentence 1)"
    assert report.added == {"sentence pairs (data.split_sentences)": 7}
    assert report.skipped == {"sentence pair: length-ratio filter": 1}
    assert report.examples["sentence pair: length-ratio filter"] == ["c.tsv:6 (sentence 2)"]


def test_sentences_of_dev_or_test_are_not_added() -> None:
    report = ReadReport()
    avoid = [Pair("Espera", "Hold on."), Pair("Algo distinto.", "how are you")]  # by match_key: case, final stop
    out = sentence_pairs(PAIRS[:2], CleanConfig(), avoid, report)
    assert [p.src for p in out] == ["¡Hola!", "No te vayas."]
    assert report.skipped == {"sentence pair: in the dev or test split": 2}


def test_split_sentences_adds_to_train_only_and_keeps_the_split(tmp_path: Path) -> None:
    corpus = tmp_path / "c.tsv"
    pairs = [(f"Frase {i}. Otra frase {i}.", f"Sentence {i}. Another sentence {i}.") for i in range(60)]
    corpus.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    config = load_train_config(None, [f"data.corpora=['{corpus}']", "data.dev_size=5", "data.test_size=5"])
    plain = load_and_split(config.data, ReadReport())
    report = ReadReport()
    split = load_and_split(dataclasses.replace(config.data, split_sentences=True), report)
    assert split.dev == plain.dev and split.test == plain.test
    assert split.train[: len(plain.train)] == plain.train
    added = split.train[len(plain.train) :]
    assert len(added) == 2 * len(plain.train) == report.added["sentence pairs (data.split_sentences)"]
    held = {match_key(p.src) for p in plain.dev + plain.test} | {match_key(p.tgt) for p in plain.dev + plain.test}
    assert not any(match_key(p.src) in held or match_key(p.tgt) in held for p in added)
    assert "added" in report.as_dict() and "added" not in ReadReport().as_dict()
