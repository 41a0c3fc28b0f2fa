"""Invariants of the from-scratch Transformer: masks, causality, padding, cache, beam, inspection, overfitting."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import tiny_config

from model.attention import MultiHeadAttention, causal_mask, padding_mask
from model.attention_maps import inspect
from model.config import ConfigError, ModelConfig
from model.decode import beam_search, greedy
from model.transformer import Transformer

PAD, BOS, EOS = 0, 2, 3


def tiny_model(seed: int = 0, **changes: object) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(tiny_config(**changes)).eval()


def random_ids(b: int, t: int, seed: int, lengths: list[int] | None = None) -> torch.Tensor:
    """(B, T) ids in [4, 40) ending with EOS at each row's length, padded after it."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 40, (b, t), generator=g)
    for row, length in enumerate(lengths or [t] * b):
        ids[row, length - 1] = EOS
        ids[row, length:] = PAD
    return ids


ALL_SHAPES = [
    {"norm": "pre"},
    {"norm": "post"},
    {"positional": "learned"},
    {"share_embeddings": False, "tie_output": False},
]


@pytest.mark.parametrize("changes", ALL_SHAPES)
def test_attention_rows_sum_to_one_and_masked_entries_are_exactly_zero(changes: dict) -> None:
    model = tiny_model(**changes)
    src = random_ids(3, 9, seed=1, lengths=[9, 5, 2])
    tgt_in = torch.cat([torch.full((3, 1), BOS), random_ids(3, 6, seed=2, lengths=[6, 3, 1])], dim=1)
    memory, src_mask, enc = model.encode(src, need_weights=True)
    _, dec, cross = model.decode(tgt_in, memory, src_mask, need_weights=True)
    src_real = src != PAD  # (B, S)
    tgt_real = tgt_in != PAD  # (B, T)
    for w in enc + dec + cross:
        assert torch.allclose(w.sum(-1), torch.ones_like(w.sum(-1)), atol=1e-6)
    for w in enc + cross:
        assert (w.masked_select(~src_real[:, None, None, :].expand_as(w)) == 0).all()  # padding gets exactly 0
    future = ~torch.ones(7, 7, dtype=torch.bool).tril()
    for w in dec:
        assert (w[..., future] == 0).all()  # the future gets exactly 0
        assert (w.masked_select(~tgt_real[:, None, None, :].expand_as(w)) == 0).all()


def test_changing_a_later_target_token_never_changes_earlier_outputs() -> None:
    model = tiny_model()
    src = random_ids(2, 7, seed=3)
    tgt_in = torch.cat([torch.full((2, 1), BOS), random_ids(2, 7, seed=4)], dim=1)
    before = model(src, tgt_in)
    for position in range(1, tgt_in.size(1)):
        changed = tgt_in.clone()
        changed[:, position] = (changed[:, position] + 7) % 36 + 4
        after = model(src, changed)
        assert torch.equal(before[:, :position], after[:, :position])


def test_extra_padding_changes_no_output_at_real_positions() -> None:
    model = tiny_model()
    src = random_ids(2, 6, seed=5)
    tgt_in = torch.cat([torch.full((2, 1), BOS), random_ids(2, 4, seed=6)], dim=1)
    padded_src = F.pad(src, (0, 5), value=PAD)
    padded_tgt = F.pad(tgt_in, (0, 3), value=PAD)
    plain = model(src, tgt_in)
    padded = model(padded_src, padded_tgt)
    torch.testing.assert_close(padded[:, : tgt_in.size(1)], plain, atol=1e-5, rtol=1e-5)


def test_fast_path_equals_explicit_path() -> None:
    torch.manual_seed(0)
    attn = MultiHeadAttention(d_model=32, n_heads=4).eval()
    x = torch.randn(3, 8, 32)
    memory = torch.randn(3, 5, 32)
    ids = random_ids(3, 5, seed=7, lengths=[5, 3, 1])
    masks = [padding_mask(ids, PAD), causal_mask(8) & padding_mask(random_ids(3, 8, 8, [8, 4, 1]), PAD), None]
    for kv, mask in ((memory, masks[0]), (x, masks[1]), (memory, masks[2])):
        fast, none = attn(x, kv, mask)
        explicit, weights = attn(x, kv, mask, need_weights=True)
        assert none is None and weights.shape == (3, 4, 8, kv.size(1))
        torch.testing.assert_close(fast, explicit, atol=1e-5, rtol=1e-5)


def test_fast_path_matches_pytorch_multihead_attention() -> None:
    """Our projections + SDPA compute the same function as torch's reference nn.MultiheadAttention."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(d_model=16, n_heads=2).eval()
    ref = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)  # the same stacked [W_Q; W_K; W_V]
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    x = torch.randn(2, 5, 16)
    ids = random_ids(2, 5, seed=9, lengths=[5, 2])
    out, weights = ours(x, x, padding_mask(ids, PAD), need_weights=True)
    ref_out, ref_weights = ref(x, x, x, key_padding_mask=ids == PAD, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("changes", ALL_SHAPES)
def test_cached_greedy_equals_uncached_greedy(changes: dict) -> None:
    model = tiny_model(**changes)
    src = random_ids(4, 8, seed=10, lengths=[8, 6, 3, 1])
    cached = greedy(model, src, max_len_a=1.0, max_len_b=5)
    uncached = greedy(model, src, max_len_a=1.0, max_len_b=5, use_cache=False)
    assert [h.tokens for h in cached] == [h.tokens for h in uncached]
    assert all(h.tokens[-1] == EOS for h in cached)
    for a, b in zip(cached, uncached, strict=True):
        assert a.log_prob == pytest.approx(b.log_prob, abs=1e-4)


@pytest.mark.parametrize("changes", ALL_SHAPES)
def test_one_decoder_loop_gives_the_same_states_in_one_pass_in_chunks_and_step_by_step(changes: dict) -> None:
    model = tiny_model(**changes)
    src = random_ids(2, 6, seed=16, lengths=[6, 4])
    tgt_in = torch.cat([torch.full((2, 1), BOS), random_ids(2, 6, seed=17)], dim=1)  # (2, 7), no padding
    memory, src_mask, _ = model.encode(src)
    full = model.decode(tgt_in, memory, src_mask, need_weights=True)
    caches = model.start_caches(memory, capacity=7)
    parts = [model.decode(tgt_in[:, :3], None, src_mask, True, caches)]  # three positions at once, then one by one
    parts += [model.decode(tgt_in[:, t : t + 1], None, src_mask, True, caches) for t in range(3, 7)]
    torch.testing.assert_close(torch.cat([p.hidden for p in parts], dim=1), full.hidden, atol=1e-5, rtol=1e-5)
    for layer in range(model.config.n_decoder_layers):
        torch.testing.assert_close(parts[0].self_weights[layer], full.self_weights[layer][:, :, :3, :3])
        torch.testing.assert_close(parts[-1].self_weights[layer], full.self_weights[layer][:, :, 6:])
        torch.testing.assert_close(parts[-1].cross_weights[layer], full.cross_weights[layer][:, :, 6:])
    assert all(cache.length == 7 for cache in caches)
    with pytest.raises(ValueError, match="cache holds 7 positions"):
        model.decode(tgt_in[:, :1], None, src_mask, caches=caches)


def test_inspection_pass_equals_maps_captured_step_by_step() -> None:
    model = tiny_model()
    src = random_ids(1, 7, seed=11)
    out_ids = greedy(model, src, max_len_a=1.0, max_len_b=4)[0].tokens
    maps = inspect(model, src[0].tolist(), out_ids)
    memory, src_mask, enc = model.encode(src, need_weights=True)
    caches = model.start_caches(memory)
    tokens = [BOS, *out_ids[:-1]]
    with torch.no_grad():
        for t, token in enumerate(tokens):
            step = model.decode_step(torch.tensor([[token]]), caches, src_mask, need_weights=True)
            caches = step.caches
            for layer in range(model.config.n_decoder_layers):
                torch.testing.assert_close(
                    maps.decoder[layer, :, t, : t + 1], step.self_weights[layer][0, :, 0], atol=1e-5, rtol=0
                )
                torch.testing.assert_close(
                    maps.cross[layer, :, t], step.cross_weights[layer][0, :, 0], atol=1e-5, rtol=0
                )
            if t < len(out_ids) - 1:  # the last token may be EOS forced by the length limit
                assert int(step.logits.argmax(-1)) == out_ids[t]  # the forced pass replays the decoder's choices
    torch.testing.assert_close(maps.encoder, torch.stack([w[0] for w in enc]), atol=1e-6, rtol=0)
    assert maps.tgt_in_ids == tokens and maps.tgt_out_ids == out_ids
    n = len(out_ids)
    assert (
        maps.decoder.shape == (2, 4, n, n) and maps.cross.shape == (2, 4, n, 7) and maps.encoder.shape == (2, 4, 7, 7)
    )


def test_inspection_turns_dropout_off_and_leaves_the_mode_as_it_was() -> None:
    model = tiny_model(dropout=0.3, attention_dropout=0.3)
    src_ids, out_ids = random_ids(1, 6, seed=18)[0].tolist(), [5, 6, 7, EOS]
    expected = inspect(model, src_ids, out_ids)
    model.train()
    again = inspect(model, src_ids, out_ids)
    assert model.training
    for a, b in ((again.encoder, expected.encoder), (again.decoder, expected.decoder), (again.cross, expected.cross)):
        assert torch.equal(a, b)


def test_attention_is_returned_never_stored_on_modules() -> None:
    model = tiny_model()
    before = {name: set(vars(m)) for name, m in model.named_modules()}
    src = random_ids(1, 5, seed=19)
    memory, src_mask, _ = model.encode(src, need_weights=True)
    model.decode(torch.tensor([[BOS, 5, 6]]), memory, src_mask, need_weights=True)
    model.decode_step(torch.tensor([[BOS]]), model.start_caches(memory, 4), src_mask, need_weights=True)
    assert {name: set(vars(m)) for name, m in model.named_modules()} == before
    assert not [name for name, m in model.named_modules() if any(isinstance(v, torch.Tensor) for v in vars(m).values())]


def test_beam_size_one_equals_greedy() -> None:
    model = tiny_model()
    src = random_ids(3, 6, seed=12, lengths=[6, 4, 2])
    beams = beam_search(model, src, beam_size=1, max_len_a=1.0, max_len_b=6)
    greedy_out = greedy(model, src, max_len_a=1.0, max_len_b=6)
    assert [b[0].tokens for b in beams] == [g.tokens for g in greedy_out]


def test_beam_search_n_best_is_sorted_and_scored_by_normalised_log_probability() -> None:
    model = tiny_model()
    src = random_ids(2, 6, seed=13)
    nbest = beam_search(model, src, beam_size=4, n_best=4, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    for hyps in nbest:
        assert len(hyps) == 4
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        for h in hyps:
            assert h.tokens[-1] == EOS and EOS not in h.tokens[:-1]
            assert h.score == pytest.approx(h.log_prob / len(h.tokens))
            # the reported log-probability is the model's own score of that sequence
            with torch.no_grad():
                logits = model(src[nbest.index(hyps) : nbest.index(hyps) + 1], torch.tensor([[BOS, *h.tokens[:-1]]]))
                logp = logits.log_softmax(-1)[0, torch.arange(len(h.tokens)), torch.tensor(h.tokens)].sum()
            assert float(logp) == pytest.approx(h.log_prob, abs=1e-3)


def forced_token_log_probs(model: Transformer, src: torch.Tensor, tokens: list[int]) -> list[float]:
    """log p(y_t | source, y_<t) of every token: one teacher-forced pass."""
    with torch.no_grad():
        logp = model(src, torch.tensor([[BOS, *tokens[:-1]]])).log_softmax(-1)
    return logp[0, torch.arange(len(tokens)), torch.tensor(tokens)].tolist()


def test_every_hypothesis_carries_its_tokens_log_probabilities() -> None:
    """Greedy and beam keep each token's log-probability: one per token, EOS included, summing to the log-probability,
    equal to a forced pass's; greedy's tokens are its argmax (the search's output is what it was)."""
    model = tiny_model(seed=5)
    src = random_ids(3, 6, seed=15, lengths=[6, 4, 2])
    hyps = [
        *greedy(model, src, max_len_a=1.0, max_len_b=5),
        *(h for b in beam_search(model, src, 4, n_best=4) for h in b),
    ]
    rows = [*range(3), *(i for i in range(3) for _ in range(4))]
    for row, h in zip(rows, hyps, strict=True):
        assert len(h.token_log_probs) == len(h.tokens)
        assert sum(h.token_log_probs) == pytest.approx(h.log_prob, abs=1e-4)
        forced = forced_token_log_probs(model, src[row : row + 1, : int((src[row] != PAD).sum())], h.tokens)
        assert h.token_log_probs == pytest.approx(forced, abs=1e-4)


def test_beam_search_finds_at_least_the_greedy_score() -> None:
    model = tiny_model(seed=3)
    src = random_ids(4, 6, seed=14)
    g = greedy(model, src, max_len_a=1.0, max_len_b=4)
    b = beam_search(model, src, beam_size=5, length_penalty=0.0, max_len_a=1.0, max_len_b=4)
    for greedy_hyp, beam_hyps in zip(g, b, strict=True):
        assert beam_hyps[0].log_prob >= greedy_hyp.log_prob - 1e-4


def test_no_pytorch_transformer_modules_are_used() -> None:
    model = tiny_model()
    banned = (
        torch.nn.Transformer,
        torch.nn.MultiheadAttention,
        torch.nn.TransformerEncoderLayer,
        torch.nn.TransformerDecoderLayer,
    )
    assert not any(isinstance(m, banned) for m in model.modules())
    source = "".join(p.read_text() for p in Path("model").glob("*.py"))
    assert "nn.Transformer" not in source and "nn.MultiheadAttention" not in source


def test_config_json_round_trip_and_errors_name_the_key(tmp_path: Path) -> None:
    config = tiny_config()
    path = tmp_path / "config.json"
    path.write_text(config.to_json())
    assert ModelConfig.from_json_file(path) == config
    path.write_text(config.to_json().replace('"d_model"', '"d_modle"'))
    with pytest.raises(ConfigError, match="d_modle"):
        ModelConfig.from_json_file(path)
    path.write_text(config.to_json().replace('"n_heads": 4', '"n_heads": "four"'))
    with pytest.raises(ConfigError, match="n_heads"):
        ModelConfig.from_json_file(path)
    path.write_text(config.to_json().replace('"norm": "pre"', '"norm": "middle"'))
    with pytest.raises(ConfigError, match="norm"):
        ModelConfig.from_json_file(path)
    with pytest.raises(ConfigError, match="divisible"):
        tiny_config(n_heads=5)


def test_tiny_model_overfits_32_pairs_and_reproduces_them() -> None:
    torch.manual_seed(0)
    config = tiny_config(d_model=64, d_ff=128, n_heads=4)
    model = Transformer(config)
    g = torch.Generator().manual_seed(1)
    lengths = torch.randint(3, 8, (32,), generator=g).tolist()
    src = random_ids(32, 8, seed=15, lengths=lengths)
    tgt_out = torch.nn.utils.rnn.pad_sequence(
        [torch.cat([r[r != PAD][:-1].flip(0), torch.tensor([EOS])]) for r in src], batch_first=True, padding_value=PAD
    )  # the reversed source
    tgt_in = torch.cat([torch.full((32, 1), BOS), tgt_out[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(300):
        loss = F.cross_entropy(model(src, tgt_in).transpose(1, 2), tgt_out, ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    out = greedy(model, src, max_len_a=1.0, max_len_b=2)
    expected = [row[row != PAD].tolist() for row in tgt_out]
    assert [h.tokens for h in out] == expected
