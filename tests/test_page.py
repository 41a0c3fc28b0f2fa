"""The teaching logic: follow a token, language names, page wording, garbage-in warnings, guided examples."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import unpadded_maps

from data.languages import name_of
from lab.attention.map_views import Followed, axis_titles, describe, focus, options, short_axis_titles, token_at
from lab.attention.sentence_maps import KINDS, SentenceMaps
from lab.page.direction import UNKNOWN, Languages, languages
from lab.page.examples import EXAMPLES, by_source, is_accepted, normalise
from lab.page.labels import TOKEN_LEGEND, captions, legend_markdown, title
from lab.page.language_check import MIN_TOKEN_PROB, Evidence, unsure, warnings
from model.run_dir import TRAIN_CONFIG_FILE
from translate.translator import DEFAULT_MODEL

SRC = ["▁El", "▁ga", "to", "▁negro", ".", "</s>"]  # words: El | gato | negro. | </s>
TGT_OUT = ["▁The", "▁black", "▁c", "at", ".", "</s>"]  # words: The | black | cat. | </s>
TGT_IN = ["<s>", "▁The", "▁black", "▁c", "at", "."]
ES_EN = Languages("es", "en", "Spanish", "English")


def maps() -> SentenceMaps:
    s, t = len(SRC), len(TGT_OUT)
    return unpadded_maps(
        np.full((1, 1, s, s), 1 / s),
        np.tril(np.ones((1, 1, t, t))) / np.arange(1, t + 1)[:, None],
        np.full((1, 1, t, s), 1 / s),
        SRC,
        TGT_IN,
        TGT_OUT,
    )


# --- follow one token ---


def test_a_source_token_is_a_row_and_column_of_the_encoder_and_a_column_of_cross_attention() -> None:
    m, gato = maps(), Followed("src", 1)
    assert focus(m, "encoder", gato) == focus(m, "encoder", gato)  # frozen, comparable
    assert focus(m, "encoder", gato).rows == {1} and focus(m, "encoder", gato).cols == {1}
    assert focus(m, "cross", gato).rows == set() and focus(m, "cross", gato).cols == {1}
    assert focus(m, "decoder", gato).rows == set() and focus(m, "decoder", gato).cols == set()


def test_an_output_token_is_the_row_predicting_it_and_the_next_input_column() -> None:
    m, black = maps(), Followed("tgt", 1)  # "▁black": predicted by row 1, decoder input at position 2
    assert TGT_IN[2] == TGT_OUT[1]
    assert focus(m, "decoder", black).rows == {1} and focus(m, "decoder", black).cols == {2}
    assert focus(m, "cross", black).rows == {1} and focus(m, "cross", black).cols == set()
    assert focus(m, "encoder", black).rows == set()
    end = Followed("tgt", len(TGT_OUT) - 1)  # </s> is never a decoder input
    assert focus(m, "decoder", end).cols == set()
    assert focus(m, "cross", None).rows == set()


def test_at_word_level_the_followed_piece_lights_its_whole_word() -> None:
    m = maps()
    assert focus(m, "encoder", Followed("src", 2), words=True).rows == {1}  # "to" is in "gato", word 1
    assert focus(m, "cross", Followed("tgt", 3), words=True).rows == {2}  # "at" is in "cat.", word 2
    assert focus(m, "decoder", Followed("tgt", 2), words=True).cols == {3}  # "▁c" as input: word "cat." of tgt_in
    assert token_at(m, "cross", 2, words=True) == Followed("tgt", 2)  # first piece of "cat."
    assert token_at(m, "encoder", 3) == Followed("src", 3)


def test_the_picker_lists_every_token_of_both_sides() -> None:
    m = maps()
    picks = options(m)
    assert len(picks) == len(SRC) + len(TGT_OUT)
    assert describe(m, picks[1], "Spanish", "English") == "Spanish 2: ▁ga"
    assert describe(m, picks[len(SRC)], "Spanish", "English") == "English 1: ▁The"


# --- languages from the model directory ---


def write_config(directory: Path, src: str, tgt: str) -> Path:
    (directory / TRAIN_CONFIG_FILE).write_text(json.dumps({"data": {"src_lang": src, "tgt_lang": tgt}}))
    return directory


def test_languages_come_from_the_training_config(tmp_path: Path) -> None:
    assert languages(write_config(tmp_path, "en", "es")) == Languages("en", "es", "English", "Spanish")
    assert languages(write_config(tmp_path, "pt", "en")).src == "Portuguese"
    assert languages(write_config(tmp_path, "xx", "en")).src == "xx"  # an unlisted code is shown as written
    assert name_of("pt-BR") == "Portuguese"
    assert languages(tmp_path / "missing") == UNKNOWN and not UNKNOWN.known
    (tmp_path / TRAIN_CONFIG_FILE).write_text("{not json")
    assert languages(tmp_path) == UNKNOWN
    assert languages(DEFAULT_MODEL) == ES_EN
    reversed_config = {"data": {"src_lang": "es", "tgt_lang": "en", "reverse": True}}  # trained with data.reverse
    (tmp_path / TRAIN_CONFIG_FILE).write_text(json.dumps(reversed_config))
    assert languages(tmp_path) == Languages("en", "es", "English", "Spanish")


def test_every_axis_names_query_and_key_in_the_models_languages() -> None:
    pt = Languages("pt", "en", "Portuguese", "English")
    for kind in KINDS:
        rows, cols = axis_titles(kind, pt)
        assert rows.startswith("query") and cols.startswith("key")
        assert "Spanish" not in rows + cols + captions(pt)[kind]
    assert "predicts English" in axis_titles("decoder", pt)[0]
    assert "Portuguese" in axis_titles("cross", pt)[1] and "English" in axis_titles("decoder", pt)[1]
    assert title(pt).startswith("Portuguese → English")
    assert short_axis_titles("decoder", pt) == ("input → predicts (English)", "key (English)")
    assert short_axis_titles("cross", pt) == ("input → predicts (English)", "key (Portuguese)")
    assert short_axis_titles("encoder", pt) == ("query (Portuguese)", "key (Portuguese)")


def test_token_legend_explains_the_special_pieces_as_code() -> None:
    assert [token for token, _ in TOKEN_LEGEND] == ["▁", "<s>", "</s>", "<unk>"]
    assert "`<s>`" in legend_markdown() and "<s> " not in legend_markdown().replace("`<s>`", "")


# --- garbage in ---


def evidence(text: str, translation: str, log_prob: float = -1.0, n_out: int = 8, unknown: int = 0) -> Evidence:
    return Evidence(text, translation, max(1, len(text.split())) + 1, unknown, n_out, log_prob)


def test_no_letters_unknown_characters_copies_and_low_confidence_are_flagged() -> None:
    assert warnings(evidence("12345", "I 12345."), ES_EN)[0].startswith("This model translates Spanish sentences")
    assert warnings(evidence("!!! ...", "He!"), ES_EN)
    unk = warnings(evidence("你好 世界", "He's up.", unknown=3), ES_EN)
    assert any("unknown to the model" in w for w in unk)
    copy = warnings(evidence("My name is Tom.", "My name is Tom.", log_prob=-0.5), ES_EN)
    assert any("may already be English" in w for w in copy)
    doubt = evidence("Quiero la estacion del trenn", "You've been to get a snow?", log_prob=-11.0)
    assert warnings(doubt, ES_EN) == []  # low confidence alone says nothing about the input's language
    assert "unsure of this translation" in unsure(doubt, ES_EN) and "is the input" not in unsure(doubt, ES_EN)
    # the figure is a geometric mean, and is said to be one: exp(-11 / 8) = 0.25, the arithmetic mean would differ
    assert "the geometric mean of its output tokens' probabilities" in unsure(doubt, ES_EN)
    assert f"is {math.exp(-11.0 / 8):.2f}," in unsure(doubt, ES_EN) and "average probability" not in unsure(
        doubt, ES_EN
    )
    left_out = Evidence("你好 世界", "Is it?", 1, 0, 3, -1.0, n_unreadable=4)
    assert any("4 of the input's 4 letters" in w for w in warnings(left_out, ES_EN))


def test_the_unsure_box_never_prints_its_probability_as_the_threshold() -> None:
    """Just under the threshold (0.5996 per token) the box says 0.59, below 0.60: never "0.60, below 0.6"."""
    for p in (0.5996, 0.59, 0.3):
        said = unsure(evidence("Quiero la estacion", "I want the station.", log_prob=8 * math.log(p)), ES_EN)
        shown = float(said.split(") is ")[1].split(",")[0])
        assert shown < MIN_TOKEN_PROB and shown <= p and f"below {MIN_TOKEN_PROB:.2f};" in said, said


def test_english_typed_into_a_spanish_to_english_model_is_named_however_confident() -> None:
    for text in ("My name is Tom.", "Where is the train station?", "The cat is black."):
        found = warnings(evidence(text, "I've had a word.", log_prob=-0.5), ES_EN)
        assert any("looks like English" in w for w in found), text
    assert not warnings(evidence("No me gusta el café.", "I don't like coffee.", log_prob=-0.7, n_out=7), ES_EN)


def test_confident_translations_of_real_sentences_pass() -> None:
    assert warnings(evidence("El gato negro duerme.", "The black cat sleeps.", log_prob=-0.7, n_out=7), ES_EN) == []
    assert warnings(evidence("María.", "Mary.", log_prob=-0.5, n_out=4), ES_EN) == []  # a name may be copied
    assert warnings(evidence("Tom.", "Tom.", log_prob=-0.1, n_out=3), ES_EN) == []
    e = evidence("x y", "z", log_prob=-2.0, n_out=2)
    assert e.token_prob == pytest.approx(np.exp(-1.0)) and e.token_prob < MIN_TOKEN_PROB


# --- guided examples ---


def test_accepted_answers_ignore_case_spacing_and_curly_quotes() -> None:
    example = by_source("Tengo hambre.", ES_EN)
    assert example is not None and is_accepted("I’m  hungry.", example) and is_accepted("i am hungry.", example)
    assert not is_accepted("I have hunger.", example)
    assert normalise(" A  b ") == "a b"
    assert by_source("not an example", ES_EN) is None


def test_every_example_has_answers_and_one_line_to_look_for() -> None:
    assert len({e.source for e in EXAMPLES}) == len(EXAMPLES) >= 5
    for e in EXAMPLES:
        assert e.accepted and e.look_for and "\n" not in e.look_for and len(e.look_for) < 240
