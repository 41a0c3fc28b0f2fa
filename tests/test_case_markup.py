"""Case markup (data/case_markup.py): "Hola" and "hola" read the same subwords, plus a mark for the capital."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from data.case_markup import (
    MARK,
    capitalise_first_word,
    mark_case,
    mark_tokens,
    sentence_case,
    unmark_case,
    unshout,
)
from data.corpus import Pair
from data.tokenizer import Tokenizer, train_tokenizer
from lab.alignment.scoring import piece_words
from lab.attention.words import word_groups, word_labels
from lab.page.labels import legend_markdown
from model.run_dir import WEIGHTS_FILE
from model.transformer import Transformer
from model.weights import ModelLoadError, load_weights, save_model
from tests.conftest import tiny_config, toy_pairs

SENTENCES = ["Hola mundo", "¿Dónde vive Ana?", "McDonald y la ONU", "El 3D de Tom.", "L'Oréal", "İstanbul", "Ya"]


@pytest.mark.parametrize("text", SENTENCES)
def test_marking_lowers_first_letters_and_unmarking_restores_the_text(text: str) -> None:
    marked = mark_case(text)
    assert unmark_case(marked) == text
    words = marked.replace(MARK, "").split()
    capitalised = [w for w in words if w[0].isupper() and w[0] != "İ" and not w.rstrip("?.").isupper()]
    assert not capitalised  # "İ" lowers to two characters, acronyms stay


def test_marking_is_invertible_on_random_text() -> None:
    rng = random.Random(0)
    alphabet = "aAbBñÑéÉzZ19 ,.¿?¡!'_-"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        marked = mark_case(text)
        assert marked.lower().replace(MARK, "") == text.lower()  # only first letters change, and only their case
        if sentence_case(text) == text:
            assert unmark_case(marked) == text
        else:  # all in capitals, or a lowercase first letter: read as the sentence-cased text
            assert marked == mark_case(sentence_case(text)) and unmark_case(marked) == sentence_case(text)
        assert sentence_case(sentence_case(text)) == sentence_case(text)


def test_examples_of_marking() -> None:
    assert mark_case("Hola mundo") == f"hola{MARK} mundo"
    assert mark_case("¿Dónde vive Ana?") == f"¿dónde{MARK} vive ana{MARK}?"
    assert mark_case("El 3D") == f"el{MARK} 3D"  # "3D" does not start with a letter
    assert mark_case("La ONU y EE. UU.") == f"la{MARK} ONU y EE. UU."  # acronyms keep their capitals
    assert mark_case(f"Hola{MARK}") == f"hola{MARK}"  # a mark typed by the user is not read as one


@pytest.mark.parametrize(
    ("shouted", "sentence_case"),
    [("HOLA MUNDO", "Hola mundo"), ("¿DÓNDE ESTÁ EL BAÑO?", "¿Dónde está el baño?"), ("¡HOLA, ANA!", "¡Hola, ana!")],
)
def test_a_text_all_in_capitals_is_read_in_sentence_case(shouted: str, sentence_case: str) -> None:
    assert unshout(shouted) == sentence_case
    assert mark_case(shouted) == mark_case(sentence_case)
    assert unshout(sentence_case) == sentence_case and unshout(sentence_case.lower()) == sentence_case.lower()


@pytest.mark.parametrize(
    ("typed", "sentence"),
    [
        ("hola mundo", "Hola mundo"),
        ("¿dónde está Ana?", "¿Dónde está Ana?"),
        ("¡ya!", "¡Ya!"),
        ("hola. adiós", "Hola. adiós"),
    ],
)
def test_a_lowercase_first_letter_is_read_as_a_capital(typed: str, sentence: str) -> None:
    """Every corpus sentence begins with a capital: "hola mundo" reads as "Hola mundo" (only the text's first word)."""
    assert capitalise_first_word(typed) == sentence == sentence_case(typed)
    assert mark_case(typed) == mark_case(sentence)


@pytest.mark.parametrize("text", ["3 gatos", "2 más 2", "3D nuevo", "ßa", "", "¿?"])
def test_a_text_that_does_not_begin_with_a_word_keeps_its_case(text: str) -> None:
    assert capitalise_first_word(text) == text
    assert unmark_case(mark_case(text)) == text


@pytest.mark.parametrize("text", ["ONU", "La ONU y la OTAN.", "TV 3D", "Vi a Tom en la NASA", "123 456", ""])
def test_acronyms_and_text_with_a_lowercase_letter_are_not_shouting(text: str) -> None:
    assert unshout(text) == text
    assert unmark_case(mark_case(text)) == text


@pytest.fixture(scope="module")
def marked_tokenizer() -> Tokenizer:
    pairs = [Pair(s, t) for s, t in toy_pairs(300)] + [Pair("hola gato.", "hello cat.")] * 5
    return train_tokenizer(pairs, 80, case_markup=True)


def test_a_tokenizer_trained_with_case_markup_reads_capitals_as_the_lowercase_pieces_and_a_mark(
    marked_tokenizer: Tokenizer, tmp_path: Path
) -> None:
    tok = marked_tokenizer
    assert tok.case_markup
    upper = tok.src_pieces(tok.encode_src("El Gato."))
    lower = tok.src_pieces(tok.encode_src("el gato."))  # read as "El gato.": every text begins with a capital
    assert upper.count(MARK) == 2 and lower.count(MARK) == 1
    assert [p for p in upper if p != MARK] == [p for p in lower if p != MARK]
    assert tok.tgt_pieces(tok.encode_tgt("Hello cat.")) != tok.tgt_pieces(tok.encode_tgt("hello cat."))  # target cased
    tok.save(tmp_path)
    assert Tokenizer.load(tmp_path).case_markup  # the vocabulary file is what says so


def test_adding_case_markup_to_a_tokenizer_keeps_every_existing_id(tmp_path: Path) -> None:
    pairs = [Pair(s, t) for s, t in toy_pairs(300)]
    plain = train_tokenizer(pairs, 80)
    assert not plain.case_markup
    marked = plain.with_case_markup()
    size = plain.src.get_piece_size()
    assert marked.case_markup and marked.joint and marked.src.get_piece_size() == size + 1
    assert marked.src.piece_to_id(MARK) == size  # the new piece comes last
    assert all(marked.src.id_to_piece(i) == plain.src.id_to_piece(i) for i in range(size))
    assert marked.encode_src("3 el gato rojo.") == plain.encode_src("3 el gato rojo.")  # lowercase reads as before
    ids = marked.encode_src("El gato rojo 3.")
    assert size in ids and [i for i in ids if i != size] == plain.encode_src("el gato rojo 3.")
    assert marked.with_case_markup() is marked


def test_labels_and_gold_alignment_attach_the_mark_to_its_word(marked_tokenizer: Tokenizer) -> None:
    tok = marked_tokenizer
    pieces = tok.src_pieces(tok.encode_src("Hola gato."))
    labels = word_labels(pieces, word_groups(pieces, [p == "</s>" for p in pieces]))
    assert labels == ["Hola", "gato.", "</s>"]
    for tokens in (["Hola", "gato", "."], ["hola", "gato", "."], ["HOLA", "GATO", "."]):
        ids, words = piece_words(tok.src, tokens, tok.src_tokens)
        assert ids == tok.encode_src(" ".join(tokens[:2]) + ".")[:-1]  # as the model reads the sentence
        assert [words[i] for i, id_ in enumerate(ids) if id_ == tok.src.piece_to_id(MARK)] == [0]  # one mark: "Hola"
        assert sorted(set(words)) == [0, 1, 2]


@pytest.mark.parametrize(
    "tokens", [["hola", "mundo", "."], ["¿", "DÓNDE", "ESTÁ", "ANA", "?"], ["3", "gatos"], ["İstanbul", "es", "grande"]]
)
def test_tokens_are_marked_as_in_the_text_they_make(tokens: list[str]) -> None:
    assert " ".join(mark_tokens(tokens)) == mark_case(" ".join(tokens))


def test_the_legend_explains_the_mark_only_when_asked() -> None:
    assert MARK not in legend_markdown() and f"`{MARK}`" in legend_markdown(case_mark=True)


def test_weights_load_into_a_vocabulary_that_grew_only_when_allowed(tmp_path: Path) -> None:
    torch.manual_seed(0)
    small = Transformer(tiny_config())
    save_model(small, tmp_path)
    grown = Transformer(tiny_config(src_vocab_size=41, tgt_vocab_size=41))
    with pytest.raises(ModelLoadError, match="shape"):
        load_weights(grown, tmp_path / WEIGHTS_FILE)
    load_weights(grown, tmp_path / WEIGHTS_FILE, new_rows=True)
    assert torch.equal(grown.src_embed.weight[:-1], small.src_embed.weight)
    assert grown.src_embed.weight[-1].abs().sum() > 0  # the new row keeps its initialisation
    rest = [(n, p) for n, p in small.named_parameters() if "embed" not in n]
    assert all(torch.equal(p, dict(grown.named_parameters())[n]) for n, p in rest)
