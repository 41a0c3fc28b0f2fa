"""The what-if tools are the model's own computation: head gates, forced prefixes, attribution, sampling, edits."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import tiny_config

from lab.whatif import attribution
from lab.whatif.attribution import MAX_IG_STEPS, MAX_IG_WORK, attribute
from lab.whatif.forced_prefix import force
from lab.whatif.head_ablation import Head, ablate, all_heads, head_effects, switched_off
from lab.whatif.steering import Steered, output_log_probs, search
from model.decode import beam_search, greedy
from model.intervention import Intervention
from model.transformer import Transformer
from translate.translator import DecodeOptions

SRC = [5, 9, 12, 7, 3]  # x1 … x4 </s> (eos_id 3 in the tiny config)


def tiny_model(seed: int = 0, **changes: object) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(tiny_config(**changes)).eval()


def logits(model: Transformer, src_ids: list[int], out_ids: list[int], what: Intervention | None) -> torch.Tensor:
    with torch.inference_mode():
        src = torch.tensor([src_ids])
        tgt_in = torch.tensor([[model.config.bos_id, *out_ids[:-1]]])
        memory, mask, _ = model.encode(src, intervention=what)
        return model.output(model.decode(tgt_in, memory, mask, intervention=what).hidden)[0]  # (T, V)


def greedy_tokens(model: Transformer, src_ids: list[int]) -> list[int]:
    return greedy(model, torch.tensor([src_ids]))[0].tokens


def test_an_intervention_that_changes_nothing_is_the_plain_model() -> None:
    model = tiny_model()
    out = greedy_tokens(model, SRC)
    scale = model.config.d_model**0.5
    vectors = Intervention(
        src_vectors=model.src_embed(torch.tensor([SRC])) * scale,
        tgt_vectors=model.tgt_embed(torch.tensor([[model.config.bos_id, *out[:-1]]])) * scale,
    )
    plain = logits(model, SRC, out, None)
    assert torch.equal(logits(model, SRC, out, switched_off(model, [])), plain)  # gates of 1
    assert torch.allclose(logits(model, SRC, out, vectors), plain, atol=1e-6)


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_zeroing_a_head_equals_zeroing_its_slice_of_the_output_projection(norm: str, kind: str) -> None:
    model = tiny_model(norm=norm)
    out = greedy_tokens(model, SRC)
    head = Head(kind, 1, 2)  # type: ignore[arg-type]
    edited = copy.deepcopy(model)
    layers = edited.encoder_layers if kind == "encoder" else edited.decoder_layers
    attention = {"encoder": "self_attn", "decoder": "self_attn", "cross": "cross_attn"}[kind]
    d = model.config.d_model // model.config.n_heads
    with torch.no_grad():
        getattr(layers[head.layer], attention).out_proj.weight[:, head.head * d : (head.head + 1) * d] = 0.0
    gated = logits(model, SRC, out, switched_off(model, [head]))
    assert torch.allclose(gated, logits(edited, SRC, out, None), atol=1e-5)
    assert not torch.allclose(gated, logits(model, SRC, out, None), atol=1e-5)  # the head did something


def test_heads_off_decode_with_the_cache_as_without_it() -> None:
    """Greedy over the ablated model (cached steps) picks, at each step, the argmax of the teacher-forced pass."""
    model = tiny_model(1)
    off = switched_off(model, [Head("cross", 0, 1), Head("encoder", 1, 0)])
    tokens, _ = search(Steered(model, off), SRC)
    forced = logits(model, SRC, tokens, off).argmax(-1).tolist()
    assert forced[:-1] == tokens[:-1]  # the last one may be EOS forced by the length limit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forcing_the_greedy_prefix_reproduces_the_greedy_output_exactly(seed: int) -> None:
    model = tiny_model(seed)
    best = greedy(model, torch.tensor([SRC]))[0]
    for k in range(len(best.tokens)):
        forced = force(model, SRC, best.tokens[:k], best.tokens)
        assert forced.tokens == best.tokens
        assert forced.log_prob == pytest.approx(best.log_prob, abs=1e-4)
        assert forced.original_log_prob == pytest.approx(best.log_prob, abs=1e-4)


def test_a_forced_prefix_is_kept_and_beam_search_continues_it() -> None:
    model = tiny_model(3)
    options = DecodeOptions(beam_size=4)
    best = beam_search(model, torch.tensor([SRC]), 4)[0][0]
    assert force(model, SRC, [], best.tokens, options).tokens == best.tokens  # nothing forced: beam search's own
    prefix = [11, 20, 8]
    forced = force(model, SRC, prefix, best.tokens, options)
    assert forced.tokens[:3] == prefix and forced.tokens[-1] == model.config.eos_id
    assert forced.log_prob == pytest.approx(float(output_log_probs(model, SRC, forced.tokens).sum()), abs=1e-5)
    too_long = force(model, SRC, [11] * 200, best.tokens, options)
    assert 0 < len(too_long.prefix) < 200 and too_long.tokens[-1] == model.config.eos_id  # cut to the output limit


def test_the_head_scan_is_one_ablation_per_head() -> None:
    model = tiny_model(4)
    out = greedy_tokens(model, SRC)
    heads, effects = head_effects(model, SRC, out)
    assert heads == all_heads(model) and effects.shape == (len(heads),)
    for i in (0, len(heads) // 2, len(heads) - 1):
        one = ablate(model, SRC, out, [heads[i]])
        assert one.ablated_log_prob - one.original_log_prob == pytest.approx(effects[i], abs=1e-5)
    none_off = ablate(model, SRC, out, [])
    assert none_off.tokens == out and none_off.ablated_log_prob == pytest.approx(none_off.original_log_prob)


IG_STEPS = 256
IG_TOLERANCE = 0.02  # |Σ IG − (f(x) − f(baseline))| ≤ 2% of |f(x) − f(baseline)| + 1e-3 with 256 midpoint steps


def test_integrated_gradients_over_the_work_limit_are_refused_before_any_pass() -> None:
    model = tiny_model(5)
    src = [5] * (MAX_IG_WORK // MAX_IG_STEPS) + [3]  # with <s>: just over what MAX_IG_STEPS points may take
    with pytest.raises(
        ValueError, match=f"limit of {MAX_IG_WORK:,}: take at most {MAX_IG_WORK // (len(src) + 1)} points"
    ):
        attribute(model.train(), src, [7, 3], 0, steps=MAX_IG_STEPS)  # training mode: any pass would raise otherwise
    attribute(model.eval(), src, [7, 3], 0, steps=MAX_IG_WORK // (len(src) + 1))  # the points it names are taken


@pytest.mark.parametrize("contrast", [None, 17])
def test_integrated_gradients_are_complete(contrast: int | None) -> None:
    model = tiny_model(5)
    out = greedy_tokens(model, SRC)
    step = min(2, len(out) - 1)
    result = attribute(model, SRC, out, step, contrast, steps=IG_STEPS)
    lp = logits(model, SRC, out, None)[step].float().log_softmax(-1)
    expected = lp[out[step]] - (lp[contrast] if contrast is not None else 0.0)
    assert result.value == pytest.approx(float(expected), abs=1e-5)  # f is the model's own log-probability
    assert result.src_integrated.shape == (len(SRC),) and result.tgt_integrated.shape == (step + 1,)
    difference = result.value - result.baseline_value
    assert abs(result.completeness_gap) <= IG_TOLERANCE * abs(difference) + 1e-3
    assert 0.0 <= result.source_share() <= 1.0


def test_integration_points_taken_in_batches_give_the_same_attribution(monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_model(5)
    out = greedy_tokens(model, SRC)
    whole = attribute(model, SRC, out, 1, steps=37)  # 37 points: more than a batch, not a multiple of one
    monkeypatch.setattr(attribution, "POINT_BATCH", 5)
    batched = attribute(model, SRC, out, 1, steps=37)
    np.testing.assert_allclose(batched.src_integrated, whole.src_integrated, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(batched.tgt_integrated, whole.tgt_integrated, rtol=1e-5, atol=1e-7)


def test_the_charts_are_built_from_tidy_frames() -> None:
    from viz.whatif_charts import (
        change_chart,
        change_frame,
        head_effect_chart,
        head_effect_frame,
        heat_rows_chart,
        heat_rows_frame,
    )

    rows = heat_rows_frame({"attention": np.array([0.2, 0.8]), "ig": np.array([-2.0, 1.0])}, ["el", "el"])
    assert rows["scaled"].between(-1, 1).all() and rows.loc[rows["row"] == "ig", "scaled"].min() == -1.0
    assert list(rows["token"][:2]) == ["el", "el (2)"]  # repeated tokens stay apart
    frame = change_frame(np.zeros((2, 3)), np.eye(2, 3), ["a", "b"], ["x", "y", "z"])
    assert len(frame) == 6 and frame["change"].sum() == 2.0
    effects = head_effect_frame(["encoder", "cross"], [0, 1], [0, 3], np.array([-0.5, 0.1]))
    assert list(effects["layer"]) == [1, 2] and list(effects["head"]) == [1, 4]  # shown 1-based
    for chart in (
        heat_rows_chart(rows, "t", "x"),
        change_chart(frame, "t", "r", "c"),
        head_effect_chart(effects, "t"),
    ):
        assert chart.to_dict()["$schema"]
