"""After the softmax: the context vectors and W_O slices recomputed from the weights equal the model's own pass."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import tiny_config, translated

from lab.attention.head_contribution import (
    RowAt,
    attention_module,
    contribution_of_row,
    final_residuals,
    frozen_norm_term,
    head_contribution,
    logit_path,
)
from lab.attention.sentence_maps import KINDS
from lab.attention.step_choices import choices
from lab.attention.translate_with_maps import maps_of
from lab.attention.weight_arithmetic import SentenceIds, sentence_ids
from model.transformer import Transformer
from translate.translator import DEFAULT_MODEL, Translator
from viz.arithmetic import head_norm_bars, head_norm_frame, term_frame, vector_strips

TOLERANCE = 1e-5
SRC, OUT = [7, 12, 9, 30, 5, 3], [11, 8, 25, 14, 3]


def random_model(norm: str) -> Transformer:
    torch.manual_seed(0)
    return Transformer(tiny_config(d_ff=48, norm=norm, max_positions=32)).eval()


def ids_of(model: Transformer) -> SentenceIds:
    return SentenceIds(SRC, [model.config.bos_id, *OUT[:-1]])


def captured_projection(model: Transformer, ids: SentenceIds, at: RowAt) -> tuple[torch.Tensor, torch.Tensor]:
    """The input (T_q, H·D) and output (T_q, d_model) of W_O in one plain forward pass (fused attention)."""
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    hook = attention_module(model, at.kind, at.layer).out_proj.register_forward_hook(
        lambda _module, args, out: seen.append((args[0][0].detach(), out[0].detach()))
    )
    try:
        with torch.inference_mode():
            model(torch.tensor([ids.src]), torch.tensor([ids.tgt_in]))
    finally:
        hook.remove()
    ((inputs, outputs),) = seen  # W_O runs once per pass
    return inputs, outputs


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("kind", KINDS)
def test_context_and_w_o_slices_equal_the_models_own_pass(norm: str, kind: str) -> None:
    model = random_model(norm)
    ids = ids_of(model)
    d = model.config.d_head
    layers = model.config.n_encoder_layers if kind == "encoder" else model.config.n_decoder_layers
    for layer in range(layers):
        for query in (0, 2, 4):
            inputs, outputs = captured_projection(model, ids, RowAt(kind, layer, 0, query))
            w_o = attention_module(model, kind, layer).out_proj
            total = w_o.bias.detach().double().numpy().copy()
            for head in range(model.config.n_heads):
                at = RowAt(kind, layer, head, query)
                result = head_contribution(model, ids, at, [])
                np.testing.assert_allclose(result.context, inputs[query, head * d : (head + 1) * d], atol=TOLERANCE)
                only_this = torch.zeros_like(inputs[query])
                only_this[head * d : (head + 1) * d] = inputs[query, head * d : (head + 1) * d]
                alone = (w_o(only_this) - w_o.bias).detach()  # W_O with every other head's context set to 0
                np.testing.assert_allclose(result.contribution, alone, atol=TOLERANCE)
                shown = result.weights[result.top] @ result.values[result.top]
                np.testing.assert_allclose(shown + result.rest_sum, result.context, atol=1e-12)
                assert result.layer_difference < TOLERANCE
                total += result.contribution
            np.testing.assert_allclose(total, outputs[query], atol=TOLERANCE)  # Σ_h contribution_h + b_O


def test_top_values_are_the_largest_weights_and_masked_keys_are_in_the_rest() -> None:
    model = random_model("pre")
    ids = ids_of(model)
    result = head_contribution(model, ids, RowAt("decoder", 1, 2, 1), ["<s>", "a", "b", "c", "d"])
    assert list(result.top) == [0, 1] or list(result.top) == [1, 0]  # row 1 sees keys 0 and 1 only
    assert np.all(result.weights[result.rest] == 0.0) and np.all(result.rest_sum == 0.0)
    wide = head_contribution(model, ids, RowAt("encoder", 0, 0, 0), list("abcdef"))
    assert len(wide.top) == 5 and len(wide.rest) == 1
    assert wide.weights[wide.rest[0]] <= wide.weights[wide.top].min()
    assert np.all(np.diff(wide.weights[wide.top]) <= 0)


@pytest.mark.parametrize("kind", ["decoder", "cross"])
def test_the_logit_path_is_the_models_logit_and_its_exact_pieces(kind: str) -> None:
    model = random_model("pre")
    ids = ids_of(model)
    last = model.config.n_decoder_layers - 1
    with torch.inference_mode():
        logits = model(torch.tensor([ids.src]), torch.tensor([ids.tgt_in]))[0].double()  # (T, V)
    for query, token in enumerate(OUT):
        residual = final_residuals(model, ids)[query]
        beta = float(model.output.weight[token].detach().double() @ model.decoder_norm.bias.detach().double())
        # the frozen-scale map, applied to the whole residual stream, gives back the logit: it is the right map
        whole = frozen_norm_term(model, residual, residual, token) + beta
        assert whole == pytest.approx(float(logits[query, token]), abs=1e-4)
        at = RowAt(kind, last, 1, query)
        contribution = head_contribution(model, ids, at, []).contribution
        path = logit_path(model, ids, at, contribution, token)
        assert path.logit == pytest.approx(float(logits[query, token]), abs=1e-5)
        assert path.log_prob == pytest.approx(float(logits[query].log_softmax(-1)[token]), abs=1e-5)
        u = model.output.weight[token].detach().double()
        assert path.direct == pytest.approx(float(u @ torch.from_numpy(contribution)))
        zeroed = copy.deepcopy(model)  # switched off = its W_O columns zeroed: an independent route to the same logit
        with torch.no_grad():
            d = model.config.d_head
            attention_module(zeroed, kind, last).out_proj.weight[:, d : 2 * d] = 0.0  # head 1's columns
            off = zeroed(torch.tensor([ids.src]), torch.tensor([ids.tgt_in]))[0, query, token]
        assert path.logit_off == pytest.approx(float(off), abs=1e-5)
        assert path.total_effect == pytest.approx(path.logit - path.logit_off)


def test_the_logit_path_is_refused_below_the_last_layer_and_has_no_norm_term_post_norm() -> None:
    model = random_model("pre")
    with pytest.raises(ValueError, match="last"):
        logit_path(model, ids_of(model), RowAt("cross", 0, 0, 0), np.zeros(32), OUT[0])
    with pytest.raises(ValueError, match="last"):
        logit_path(model, ids_of(model), RowAt("encoder", 1, 0, 0), np.zeros(32), OUT[0])
    post = random_model("post")
    at = RowAt("cross", 1, 0, 0)
    path = logit_path(post, ids_of(post), at, head_contribution(post, ids_of(post), at, []).contribution, OUT[0])
    assert path.through_norm is None and path.norm_scale is None


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_the_shipped_models_last_cross_head_reaches_the_chosen_tokens_log_probability(translator: Translator) -> None:
    translation = translator.translate("El gato negro duerme.")
    maps = maps_of(translator, translation.src_ids, translation.best.tokens)
    ids = sentence_ids(translator.tokenizer, maps)
    out = [*ids.tgt_in[1:], translator.tokenizer.tgt.eos_id()]
    steps = choices(translator.model, translator.tokenizer, ids.src, out)
    last = maps.n_layers("cross") - 1
    for query in (0, len(out) - 1):
        result, path = contribution_of_row(translator.model, translator.tokenizer, maps, RowAt("cross", last, 1, query))
        assert result.layer_difference < TOLERANCE and path is not None
        assert path.log_prob == pytest.approx(steps[query].log_prob, abs=TOLERANCE)
        assert result.w_o.shape == (translator.model.config.d_model, translator.model.config.d_head)
    first, none = contribution_of_row(translator.model, translator.tokenizer, maps, RowAt("decoder", 0, 0, 0))
    assert none is None and list(first.top) == [0]  # row 1 of masked self-attention sees <s> alone


def test_the_terms_of_the_weighted_sum_add_up_to_the_context_and_the_charts_build() -> None:
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(8))
    values = rng.normal(size=(8, 4))
    top = np.argsort(-weights)[:5]
    frame = term_frame(list("abcdefgh"), weights, values, top, weights @ values)
    assert frame["term"].nunique() == 7 and len(frame) == 7 * 4  # 5 keys, the other 3, the context
    by_term = frame.pivot_table(index="order", columns="component", values="value").to_numpy()
    np.testing.assert_allclose(by_term[:-1].sum(0), by_term[-1], atol=1e-12)  # the rows add up to the context
    assert vector_strips(frame, "t").to_dict()["mark"]["type"] == "rect"
    heads = head_norm_frame(np.array([1.0, 2.0, 0.5]), 1)
    assert list(heads["shown"]) == [False, True, False]
    assert head_norm_bars(heads, "h").to_dict()["mark"]["type"] == "bar"


def test_the_arithmetic_tab_continues_past_the_softmax_to_the_logit(model_env: Path) -> None:
    at = translated("El gato rojo 3.", "Arithmetic of a weight")
    assert at.main.get_by_key("arith_value_table").dataframe
    with pytest.raises(KeyError):  # the encoder's heads are not followed to the logits
        at.main.get_by_key("arith_logit")
    last = Translator.load(model_env).model.config.n_decoder_layers - 1
    at.selectbox(key="arith_kind").set_value("cross").run()
    at.selectbox(key="arith_layer_cross").set_value(last).run()
    assert not at.exception, [e.message for e in at.exception]
    table = at.main.get_by_key("arith_logit").dataframe[0].value
    assert table["quantity"].iloc[0].startswith("logit of") and table["value"].notna().all()
    assert any("largest difference from the model's own" in c.value for c in at.caption)
