"""The lab's numpy logic: word merging, alignments, steps, checks — and the real model's maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import unpadded_maps

from data.sentences import MAX_PIECE, fit, pieces, sentences
from lab.alignment.links import align, hard_links, target_rows
from lab.attention.map_views import MAX_GRID_CELLS, MAX_MAP_CELLS, MapView, grid_plan, map_view, too_big
from lab.attention.sentence_maps import KINDS, SentenceMaps, pick, problems
from lab.attention.translate_with_maps import (
    EMPTY,
    TextTranslation,
    maps_of,
    notices,
    positional_table,
    set_threads,
    shown,
    translate_text,
)
from lab.attention.words import merge_columns, merge_mask, merge_rows, word_groups, word_labels
from lab.page.request import Request, changes, stale_note
from translate.translator import Candidate, DecodeOptions, Translation, Translator

SRC = ["▁El", "▁ga", "to", "▁rojo", ".", "</s>"]  # words: El | gato | rojo. | </s>
TGT_OUT = ["▁The", "▁red", "▁c", "at", ".", "</s>"]  # words: The | red | cat. | </s>
TGT_IN = ["<s>", "▁The", "▁red", "▁c", "at", "."]  # words: <s> | The | red | cat.


def random_rows(rng: np.random.Generator, shape: tuple[int, ...], allowed: np.ndarray | None = None) -> np.ndarray:
    """Softmax rows over the last axis; cells outside ``allowed`` are exactly 0 (as a mask makes them)."""
    logits = rng.normal(size=shape)
    if allowed is not None:
        logits = np.where(allowed, logits, -np.inf)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def synthetic_maps(seed: int = 0, layers: int = 2, heads: int = 3) -> SentenceMaps:
    rng = np.random.default_rng(seed)
    s, t = len(SRC), len(TGT_OUT)
    causal = np.tril(np.ones((t, t), dtype=bool))
    return unpadded_maps(
        random_rows(rng, (layers, heads, s, s)),
        random_rows(rng, (layers, heads, t, t), causal),
        random_rows(rng, (layers, heads, t, s)),
        SRC,
        TGT_IN,
        TGT_OUT,
    )


def replace(maps: SentenceMaps, **changes: object) -> SentenceMaps:
    """``maps`` with some weights (numpy arrays, into the wrapped record) or labels and flags changed."""
    from dataclasses import replace as dc_replace

    weights = {k: torch.from_numpy(np.asarray(changes.pop(k))) for k in KINDS if k in changes}
    return dc_replace(maps, maps=dc_replace(maps.maps, **weights), **changes)


# --- subwords -> words (docs/attention-pitfalls.md §4) ---


def test_word_groups_follow_the_word_start_marker_and_keep_specials_apart() -> None:
    assert word_groups(SRC, [p == "</s>" for p in SRC]) == [[0], [1, 2], [3, 4], [5]]
    assert word_labels(SRC, word_groups(SRC, [p == "</s>" for p in SRC])) == ["El", "gato", "rojo.", "</s>"]
    # BOS is a word of its own even when the next piece has no ▁; a lone "▁" starts a word
    assert word_groups(["<s>", "T", "he", "▁", "3"], [True, False, False, False, False]) == [[0], [1, 2], [3, 4]]
    assert word_labels(["▁"], [[0]]) == ["▁"]


def test_word_maps_sum_source_columns_and_average_target_rows() -> None:
    maps = synthetic_maps()
    view = map_view(maps, "cross", words=True)
    assert view.rows == ["The", "red", "cat.", "</s>"]
    assert view.cols == ["El", "gato", "rojo.", "</s>"]
    np.testing.assert_allclose(view.weights.sum(-1), 1.0, atol=1e-5)  # rows still sum to 1
    sub = maps.cross
    expected_cat = sub[..., [2, 3, 4], :].mean(axis=-2)  # "cat." = mean of rows "▁c", "at", "."
    gato = expected_cat[..., 1] + expected_cat[..., 2]  # "gato" = sum of columns "▁ga", "to"
    np.testing.assert_allclose(view.weights[..., 2, 1], gato, rtol=1e-5)


def test_word_rows_name_the_decoder_inputs_they_average() -> None:
    view = map_view(synthetic_maps(), "cross", words=True)
    assert view.rows == ["The", "red", "cat.", "</s>"]
    assert view.inputs == ["<s>", "▁The", "▁red ▁c at", "."]  # "cat." averages rows computed at ▁red, ▁c, at
    assert view.row_labels == ["<s> → The", "The → red", "red → cat.", "cat. → </s>"]  # as subword rows read


def test_decoder_rows_name_their_input_and_their_prediction() -> None:
    maps = synthetic_maps()
    for kind in ("decoder", "cross"):
        view = map_view(maps, kind)
        assert view.row_labels == [f"{a} → {b}" for a, b in zip(TGT_IN, TGT_OUT, strict=True)]
    assert map_view(maps, "encoder").row_labels == SRC  # an encoder row is its own token


def test_word_level_future_cells_stay_exactly_zero_and_masked() -> None:
    maps = synthetic_maps()
    view = map_view(maps, "decoder", words=True)
    assert view.cols == ["<s>", "The", "red", "cat."]
    assert view.future.shape == view.weights.shape[-2:]
    assert view.future.any()
    assert np.all(view.weights[..., view.future] == 0.0)  # exactly, not just small
    np.testing.assert_allclose(view.weights.sum(-1), 1.0, atol=1e-5)


def test_merge_helpers_on_a_hand_made_map() -> None:
    w = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])  # 2 rows, 3 columns
    np.testing.assert_allclose(merge_columns(w, [[0, 1], [2]]), [[0.75, 0.25], [1.0, 0.0]])
    np.testing.assert_allclose(merge_rows(w, [[0, 1]]), [[0.25, 0.625, 0.125]])
    mask = np.array([[False, True, True], [False, False, True]])
    assert merge_mask(mask, [[0, 1]], [[0], [1], [2]]).tolist() == [[False, False, True]]


# --- which rows and columns: the off-by-one (docs/attention-pitfalls.md §1) ---


def test_views_label_rows_with_predicted_tokens_and_decoder_columns_with_inputs() -> None:
    maps = synthetic_maps()
    enc, dec, cross = (map_view(maps, kind) for kind in KINDS)
    assert enc.rows == enc.cols == SRC
    assert dec.rows == TGT_OUT and dec.cols == TGT_IN and dec.cols[0] == "<s>"
    assert cross.rows == TGT_OUT and cross.cols == SRC
    assert "<s>" not in dec.rows  # BOS never labels a row
    assert dec.inputs == cross.inputs == TGT_IN and enc.inputs is None  # row i is computed at decoder input i
    assert dec.future.tolist() == np.triu(np.ones((6, 6), dtype=bool), 1).tolist()
    assert not cross.future.any() and not enc.future.any()


def test_pick_chooses_layer_and_head_or_averages_heads() -> None:
    maps = synthetic_maps()
    np.testing.assert_array_equal(pick(maps.cross, 1, 2), maps.cross[1, 2])
    np.testing.assert_allclose(pick(maps.cross, 0, None), maps.cross[0].mean(0))
    assert not np.allclose(pick(maps.cross, 0, None), pick(maps.cross, 1, None))


# --- alignments: sinks excluded, both readings (docs/attention-pitfalls.md §1, §3) ---


def test_alignment_never_points_at_source_eos_even_when_it_has_the_most_weight() -> None:
    maps = synthetic_maps()
    cross = maps.cross.copy()
    cross[..., :, -1] += 10.0  # EOS soaks up the attention
    cross /= cross.sum(-1, keepdims=True)
    maps = replace(maps, cross=cross)
    for words in (False, True):
        result = align(maps, layer=0, head=None, words=words)
        assert result.excluded == ["</s>"]
        assert result.links and all(result.source[link.source] != "</s>" for link in result.links)
        assert "</s>" not in result.target  # the final EOS row has no English word
    assert map_view(maps, "cross").weights[..., -1].max() > 0.5  # the raw map keeps the sink


def test_alignment_readings_use_the_predicting_row_or_the_next_one() -> None:
    cross = np.arange(12, dtype=float).reshape(4, 3)
    np.testing.assert_array_equal(target_rows(cross, "predicts"), cross[:3])
    np.testing.assert_array_equal(target_rows(cross, "shift"), cross[1:])
    maps = synthetic_maps()
    plain = align(maps, 0, 0, "predicts")
    shifted = align(maps, 0, 0, "shift")
    assert len(plain.links) == len(shifted.links) == len(TGT_OUT) - 1
    rows = maps.cross[0, 0]
    assert [link.source for link in shifted.links] == [int(np.argmax(rows[i + 1, :-1])) for i in range(5)]


def test_whole_word_links_keep_glued_punctuation_apart() -> None:
    """Word-level links read "rojo" and "." as two source words (the gold alignments' tokens), so the final period's
    weight is never counted as the last word's: here the period soaks up each row, and no row links to "rojo"."""
    maps = synthetic_maps()
    cross = maps.cross.copy()
    cross[..., :, SRC.index(".")] += 5.0
    cross /= cross.sum(-1, keepdims=True)
    result = align(replace(maps, cross=cross), layer=0, head=None, words=True)
    assert result.source == ["El", "gato", "rojo", ".", "</s>"] and result.target == ["The", "red", "cat", "."]
    assert {result.source[link.source] for link in result.links} == {"."}
    assert word_labels(SRC, word_groups(SRC, [p == "</s>" for p in SRC])) == ["El", "gato", "rojo.", "</s>"]  # maps


def test_hard_links_with_every_column_excluded_gives_no_links() -> None:
    assert hard_links(np.ones((2, 1)), [True]) == []
    assert [link.source for link in hard_links(np.array([[0.1, 0.9], [0.7, 0.3]]), [False, True])] == [0, 0]


# --- checks before display (docs/attention-pitfalls.md §5) ---


def test_problems_catch_future_weight_padding_weight_and_bad_row_sums() -> None:
    maps = synthetic_maps()
    assert problems(maps) == []
    leaky = maps.decoder.copy()
    leaky[0, 0, 0, 1] = 1e-6  # tiny, but not exactly zero
    assert any("future" in p for p in problems(replace(maps, decoder=leaky)))
    padded = replace(maps, src_pad=[False, False, False, False, True, False])
    assert any("padding" in p for p in problems(padded))
    bad = maps.encoder * 0.5
    assert any("sum to 1" in p for p in problems(replace(maps, encoder=bad)))


# --- the real (tiny) model ---


@pytest.fixture(scope="module")
def translator(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def first_maps(translator: Translator, result: TextTranslation, sentence: int = 0, rank: int = 0) -> SentenceMaps:
    piece = result.sentences[sentence]
    return maps_of(translator, piece.src_ids, piece.candidates[rank].tokens)


def test_real_maps_are_labelled_by_position_and_pass_the_checks(translator: Translator) -> None:
    result = translate_text(translator, "El gato rojo 3.")
    assert len(result.sentences) == 1 and result.text == result.sentences[0].best.text
    maps = first_maps(translator, result)
    assert problems(maps) == []
    assert maps.tgt_in[0] == "<s>" and maps.tgt_in[1:] == maps.tgt_out[:-1] and maps.tgt_out[-1] == "</s>"
    assert maps.src[-1] == "</s>" and maps.src_special[-1] and not any(maps.src_pad)
    assert maps.decoder.shape[-2:] == (len(maps.tgt_out), len(maps.tgt_in))
    assert maps.cross.shape[-2:] == (len(maps.tgt_out), len(maps.src))
    assert np.all(maps.decoder[..., maps.future("decoder")] == 0.0)


def test_each_beam_hypothesis_gets_maps_of_exactly_its_own_tokens(translator: Translator) -> None:
    result = translate_text(translator, "El perro azul 7.", DecodeOptions(beam_size=4, n_best=3))
    candidates = result.sentences[0].candidates
    assert len(candidates) == 3
    assert [c.score for c in candidates] == sorted((c.score for c in candidates), reverse=True)
    for rank, candidate in enumerate(candidates):
        maps = first_maps(translator, result, rank=rank)
        assert maps.tgt_out[-1] == "</s>" and "</s>" not in maps.tgt_out[:-1]  # nothing past EOS
        assert maps.cross.shape[-2] == len(maps.tgt_out)
        assert translator.tokenizer.tgt.decode_pieces(maps.tgt_out[:-1]) == candidate.text


def test_too_long_input_is_translated_sentence_by_sentence_never_cut(translator: Translator) -> None:
    nouns, colours = ["gato", "perro", "libro"], ["rojo", "azul", "verde", "negro"]
    said = [f"El {nouns[i % 3]} {colours[i % 4]} {i % 20}." for i in range(60)]
    text = " ".join(said)
    assert len(translator.tokenizer.encode_src(text)) > translator.max_src_len  # the whole would not fit
    result = translate_text(translator, text)
    assert [s.source for s in result.sentences] == said  # one piece per sentence, in order, nothing lost
    assert not any(s.truncated for s in result.sentences)
    assert all(len(s.src_ids) <= translator.max_src_len for s in result.sentences)
    assert result.text == " ".join(s.best.text for s in result.sentences if s.best.text)
    assert notices(result) == [] or all("length limit" in n for n in notices(result))


def test_a_long_sentence_without_punctuation_is_split_between_words(translator: Translator) -> None:
    text = " ".join(["el gato rojo duerme en la casa verde"] * 30)  # one "sentence", far too long
    result = translate_text(translator, text)
    assert len(result.sentences) > 1 and not any(s.truncated for s in result.sentences)
    assert " ".join(s.source for s in result.sentences).split() == text.split()  # every word, once, in order
    assert all(len(s.src_ids) <= translator.max_src_len for s in result.sentences)


def test_positional_table_and_threads(translator: Translator) -> None:
    table = positional_table(translator, 10)
    assert table.shape == (10, translator.model.config.d_model)
    np.testing.assert_allclose(table[0, 0::2], 0.0, atol=1e-6)  # sin(0) = 0
    np.testing.assert_allclose(table[0, 1::2], 1.0, atol=1e-6)  # cos(0) = 1
    assert set_threads(None) == 1 and set_threads("2") == 2 and set_threads("zero") == 1
    assert set_threads("100000") == 1  # more than twice the machine's cores: the default (100,000 crashed torch)


# --- long inputs: sentences and pieces that fit ---


def words_count(text: str) -> int:
    return len(text.split()) + 1  # a stand-in tokenizer: one subword per word, plus EOS


def test_sentences_split_at_final_punctuation_and_line_breaks_only() -> None:
    text = 'Hola. ¿Qué tal?  ¡Muy bien! El Sr. García pesa 3.5 kilos… Dijo "basta." Luego se fue\nOtra línea'
    assert sentences(text) == [
        "Hola.",
        "¿Qué tal?",
        "¡Muy bien!",
        "El Sr. García pesa 3.5 kilos…",
        'Dijo "basta."',
        "Luego se fue",
        "Otra línea",
    ]
    assert sentences("  \n ") == [] and sentences("sin punto final") == ["sin punto final"]


def test_fit_cuts_at_clauses_then_words_then_characters_and_loses_nothing() -> None:
    clauses = "uno dos tres, cuatro cinco seis, siete ocho nueve diez once doce"
    runs = fit(clauses, words_count, 4)
    assert runs[:2] == ["uno dos tres,", "cuatro cinco seis,"]  # at the commas first
    assert all(words_count(r) <= 4 for r in runs)
    assert " ".join(runs).split() == clauses.split()
    chars = lambda t: len(t) + 1  # noqa: E731 - a tokenizer of one subword per character
    long_word = "a" * 50
    assert all(chars(r) <= 8 for r in fit(long_word, chars, 8)) and "".join(fit(long_word, chars, 8)) == long_word


@pytest.mark.parametrize("limit", [5, 12, 40])
def test_pieces_of_any_text_fit_the_limit(limit: int) -> None:
    text = ("Una frase corta. " * 5) + ("palabra " * 120) + "¿Y al final? Nada, nada, nada."
    parts = pieces(text, words_count, limit, long_input=10)
    assert all(words_count(p) <= limit for p in parts)
    assert " ".join(parts).split() == text.split()


def test_a_short_input_stays_whole() -> None:
    assert pieces("Hola. ¿Qué tal?", words_count, MAX_PIECE) == ["Hola. ¿Qué tal?"]
    assert pieces("   ", words_count, MAX_PIECE) == []


# --- what the page says about a result ---


def candidate(text: str, truncated: bool = False) -> Candidate:
    return Candidate([5, 3] if text else [3], -2.0, -1.0, truncated, text=text)


def piece(source: str, src_ids: list[int], cut: bool, candidates: list[Candidate]) -> Translation:
    """A piece of a text's translation as the Translator records it."""
    return Translation(source, src_ids, cut, candidates)


def test_notices_name_cut_outputs_and_cut_inputs() -> None:
    fine = TextTranslation("x", [piece("x", [4, 3], False, [candidate("X"), candidate("Y", truncated=True)])], 64)
    assert notices(fine) == []  # a cut among the other hypotheses is marked in the n-best list, not here
    cut_output = TextTranslation("x", [piece("x", [4, 3], False, [candidate("X", truncated=True)])], 64)
    assert ["length limit" in n and "the sentence" in n for n in notices(cut_output)] == [True]
    several = TextTranslation(
        "a. b. c.",
        [
            piece("a.", [4, 3], False, [candidate("A", truncated=True)]),
            piece("b.", [4, 3], True, [candidate("B")]),
            piece("c.", [4, 3], False, [candidate("C C", truncated=True)]),
        ],
        64,
    )
    cut_input, cut_outputs = notices(several)
    assert "sentence 2 " in cut_input and "longer than this model accepts" in cut_input
    assert "sentences 1 and 3 " in cut_outputs and "length limit" in cut_outputs
    assert several.text == "A B C C"


def test_an_empty_hypothesis_is_shown_as_empty_not_blank() -> None:
    assert shown(candidate("").text) == EMPTY and shown(candidate("  ").text) == EMPTY and shown("Hi") == "Hi"


def test_a_result_is_stale_when_text_model_or_settings_change() -> None:
    shown = Request("runs/a", "run: a", "Hola.", 1, 1.0, 1)
    assert changes(shown, shown) == [] and stale_note(shown, shown) == ""
    assert changes(shown, Request("runs/a", "run: a", "Adiós.", 1, 1.0, 1)) == ["the text"]
    assert changes(shown, Request("ckpt", "shipped: es-en", "Hola.", 1, 1.0, 1)) == ["the model"]
    assert changes(shown, Request("runs/a", "run: a", "Hola.", 4, 1.0, 3)) == ["the decoding settings"]
    note = stale_note(shown, Request("ckpt", "shipped", "Adiós.", 1, 1.0, 1))
    assert "the text and the model" in note and "Translate" in note
    assert shown.settings == "greedy" and "beam 4" in Request("m", "m", "t", 4, 0.6, 2).settings


# --- the page's ceilings ---


def square_view(n: int, layers: int = 2, heads: int = 4) -> MapView:
    tokens = [f"t{i}" for i in range(n)]
    return MapView("encoder", np.full((layers, heads, n, n), 1.0 / n), tokens, tokens, np.zeros((n, n), bool), None)


def test_the_grid_draws_all_layers_one_layer_or_nothing_under_its_ceiling() -> None:
    small = grid_plan(square_view(10), layer=1)
    assert small.layers == [0, 1] and small.note == ""
    side = int((MAX_GRID_CELLS / 4) ** 0.5)  # one layer of 4 heads just fits, two do not
    medium = grid_plan(square_view(side), layer=1)
    assert medium.layers == [1] and "only layer 2" in medium.note
    huge = grid_plan(square_view(side + 10), layer=1)
    assert huge.layers == [] and "Whole words" in huge.note
    for plan, n in ((small, 10), (medium, side)):
        assert len(plan.layers) * 4 * n * n <= MAX_GRID_CELLS


def test_a_map_over_the_cell_ceiling_is_refused_with_a_reason() -> None:
    assert too_big(square_view(50)) == ""
    side = int(MAX_MAP_CELLS**0.5) + 1
    assert f"{side * side:,}" in too_big(square_view(side, layers=1, heads=1))
