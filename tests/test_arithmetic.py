"""The arithmetic panel: q·k/√d_head, mask and softmax recomputed from the model equal the maps it returns."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import tiny_config

from lab.attention.sentence_maps import KINDS
from lab.attention.translate_with_maps import maps_of
from lab.attention.weight_arithmetic import (
    SentenceIds,
    WeightArithmetic,
    allowed_keys,
    layer_vectors,
    sentence_ids,
    softmax_row,
    weight_arithmetic,
    why_zero,
    worked_example,
)
from model.attention_maps import inspect
from model.transformer import Transformer
from translate.translator import DEFAULT_MODEL, Translator
from viz.arithmetic import weight_text

TOLERANCE = 1e-6


def random_model(norm: str, positional: str = "sinusoidal") -> Transformer:
    torch.manual_seed(0)
    config = tiny_config(d_ff=48, norm=norm, positional=positional, max_positions=32)
    return Transformer(config).eval()


@pytest.mark.parametrize(("norm", "positional"), [("pre", "sinusoidal"), ("post", "sinusoidal"), ("pre", "learned")])
def test_recomputed_rows_equal_the_maps_for_every_kind_layer_head_and_query(norm: str, positional: str) -> None:
    model = random_model(norm, positional)
    src, out = [7, 12, 9, 30, 5, 3], [11, 8, 25, 14, 3]
    maps = inspect(model, src, out)
    ids = SentenceIds(maps.src_ids, maps.tgt_in_ids)
    shown = {"encoder": maps.encoder, "decoder": maps.decoder, "cross": maps.cross}
    for kind in KINDS:
        allowed = allowed_keys(model, ids, kind)
        for layer in range(shown[kind].shape[0]):
            vectors = layer_vectors(model, ids, kind, layer)
            q, k = vectors.q, vectors.k  # (H, T_q, D), (H, T_k, D)
            _, heads, rows, cols = shown[kind].shape
            assert q.shape == (heads, rows, model.config.d_head) and k.shape == (heads, cols, model.config.d_head)
            for head in range(q.shape[0]):
                for query in range(q.shape[1]):
                    row = softmax_row(q[head, query], k[head], allowed[query])
                    np.testing.assert_allclose(row.weights, shown[kind][layer, head, query], atol=TOLERANCE)
                    assert row.weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_decoder_future_and_source_padding_get_exactly_zero_and_minus_infinity() -> None:
    model = random_model("pre")
    pad = model.config.pad_id
    src = [7, 12, 9, 3, pad, pad]  # a padded source, as in a batch
    maps = inspect(model, src, [11, 8, 25, 3])
    ids = SentenceIds(maps.src_ids, maps.tgt_in_ids)
    decoder_allowed = allowed_keys(model, ids, "decoder")
    assert np.array_equal(decoder_allowed, np.tril(np.ones((4, 4), dtype=bool)))
    vectors = layer_vectors(model, ids, "decoder", 1)
    q, k = vectors.q, vectors.k
    for query in range(4):
        row = softmax_row(q[0, query], k[0], decoder_allowed[query])
        future = slice(query + 1, None)
        assert np.all(row.weights[future] == 0.0) and np.all(row.exps[future] == 0.0)
        assert np.all(np.isneginf(row.scores[future])) and np.all(np.isfinite(row.scores[: query + 1]))
        np.testing.assert_allclose(row.weights, maps.decoder[1, 0, query], atol=TOLERANCE)
    for kind in ("encoder", "cross"):
        allowed = allowed_keys(model, ids, kind)
        assert not allowed[:, 4:].any() and allowed[:, :4].all()
        vectors = layer_vectors(model, ids, kind, 0)
        q, k = vectors.q, vectors.k
        row = softmax_row(q[2, 0], k[2], allowed[0])
        assert np.all(row.weights[4:] == 0.0)
        np.testing.assert_allclose(row.weights, (maps.encoder if kind == "encoder" else maps.cross)[0, 2, 0], atol=1e-6)


def test_softmax_row_spells_out_each_step() -> None:
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=8), rng.normal(size=(5, 8))
    allowed = np.array([True, True, False, True, False])
    row = softmax_row(q, k, allowed)
    np.testing.assert_allclose(row.dots, k @ q)
    np.testing.assert_allclose(row.scores[allowed], (k @ q)[allowed] / np.sqrt(8))
    assert row.exps[allowed].max() == pytest.approx(1.0)  # e^(s − max s): the largest is e^0
    np.testing.assert_allclose(row.weights, row.exps / row.exps.sum())
    assert np.all(row.weights[~allowed] == 0.0) and row.weights.sum() == pytest.approx(1.0)


def test_training_mode_is_refused() -> None:
    model = random_model("pre").train()
    with pytest.raises(ValueError, match="eval"):
        layer_vectors(model, SentenceIds([5, 3], [2, 5]), "encoder", 0)


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_weight_arithmetic_on_the_shipped_model_equals_the_shown_map(translator: Translator) -> None:
    translation = translator.translate("El gato negro duerme.")
    maps = maps_of(translator, translation.src_ids, translation.best.tokens)
    ids = sentence_ids(translator.tokenizer, maps)
    assert translator.tokenizer.src_pieces(ids.src) == maps.src
    last = {"encoder": maps.n_layers("encoder") - 1, "decoder": maps.n_layers("decoder") - 1, "cross": 0}
    for kind in KINDS:
        rows = maps.weights(kind).shape[2]
        for query in (0, rows - 1):
            a = weight_arithmetic(translator.model, translator.tokenizer, maps, kind, last[kind], 1, query)
            assert a.max_difference < TOLERANCE
            assert a.d_head == translator.model.config.d_head and a.q.shape == (a.d_head,)
            assert a.k.shape == (len(a.keys), a.d_head)
            assert (a.predicts is None) == (kind == "encoder")
    first = weight_arithmetic(translator.model, translator.tokenizer, maps, "decoder", 0, 0, 0)
    assert first.query_token == "<s>" and first.predicts == maps.tgt_out[0]
    assert first.row.weights[0] == pytest.approx(1.0) and np.all(first.row.weights[1:] == 0.0)
    assert "exactly 0" in why_zero(first) and "future" in why_zero(first)
    assert why_zero(weight_arithmetic(translator.model, translator.tokenizer, maps, "cross", 0, 0, 1)) == ""


def test_the_worked_example_fills_in_the_numbers_of_one_key(translator: Translator) -> None:
    translation = translator.translate("Tengo hambre.")
    maps = maps_of(translator, translation.src_ids, translation.best.tokens)
    a = weight_arithmetic(translator.model, translator.tokenizer, maps, "decoder", 0, 0, 1)
    best = int(np.argmax(a.row.weights))
    text = worked_example(a)
    assert f"key {best + 1}" in text and weight_text(a.row.weights[best]) in text and f"{a.row.dots[best]:.3f}" in text
    assert r"-\infty" in worked_example(a, len(a.keys) - 1)  # a future key of row 1


def test_the_worked_example_brackets_a_negative_largest_score() -> None:
    """e^{s − max s} with max s < 0 reads "−0.521 − (−0.521)", never the puzzling "−0.521 − −0.521"."""
    q, k = np.array([1.0, 0.0]), np.array([[-1.0, 0.0], [-2.0, 0.0]])  # both scores negative
    row = softmax_row(q, k, np.array([True, True]))
    a = WeightArithmetic("encoder", 0, 0, 0, "a", None, ["a", "b"], 2, q, k, row, row.weights)
    text = worked_example(a)
    assert "e^{-0.707 - (-0.707)}" in text and "- -" not in text
