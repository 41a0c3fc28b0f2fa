"""Search for a translation: batched greedy and beam search, both with a key/value cache."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor

from model.transformer import Transformer


@dataclass(frozen=True)
class Hypothesis:
    """One output: token ids (always ending with EOS: at the length limit EOS is forced) and its scores."""

    tokens: list[int]
    log_prob: float  # sum of token log-probabilities, EOS included
    score: float  # log_prob after length normalisation (what beam search ranks by)
    truncated: bool = False  # the length limit forced EOS where the model wanted to go on
    token_log_probs: tuple[float, ...] = ()  # log p(token | source, tokens before), one per token, EOS included


def max_output_lengths(src_lengths: Tensor, max_len_a: float, max_len_b: int, limit: int) -> Tensor:
    """Longest output allowed for each sentence (B,): a·S + b tokens (EOS included), capped by max_positions. Each
    sentence's cap comes from its own length (S counts its EOS, not padding): the same cap alone and in a batch."""
    return (max_len_a * src_lengths.double() + max_len_b).floor().long().clamp(1, limit)


@torch.inference_mode()
def greedy(
    model: Transformer, src: Tensor, max_len_a: float = 1.5, max_len_b: int = 10, use_cache: bool = True
) -> list[Hypothesis]:
    """Pick the most probable token at each step for every sentence of ``src`` (B, S)."""
    c = model.config
    src_lengths = (src != c.pad_id).sum(1)
    limits = max_output_lengths(src_lengths, max_len_a, max_len_b, c.max_positions)  # (B,)
    last_step = limits - 1  # (B,): the step at which each sentence must end
    n_steps = int(limits.max())
    memory, src_mask, _ = model.encode(src)
    b = src.size(0)
    tokens = torch.full((b, n_steps + 1), c.pad_id, dtype=torch.long, device=src.device)  # BOS, then the outputs
    tokens[:, 0] = c.bos_id
    log_prob = torch.zeros(b, device=src.device)
    finished = torch.zeros(b, dtype=torch.bool, device=src.device)
    truncated = torch.zeros(b, dtype=torch.bool, device=src.device)
    caches = model.start_caches(memory, n_steps) if use_cache else None
    token_lp = torch.zeros(b, n_steps, device=src.device)  # each step's token log-probability
    for step in range(n_steps):
        if caches is not None:
            logits = model.decode_step(tokens[:, step : step + 1], caches, src_mask).logits
        else:
            logits = model.output(model.decode(tokens[:, : step + 1], memory, src_mask).hidden[:, -1])
        step_logp = logits.float().log_softmax(-1)  # (B, V)
        next_token = step_logp.argmax(-1)
        out_of_room = (last_step == step) & ~finished  # end these sentences here
        truncated |= out_of_room & (next_token != c.eos_id)
        next_token = next_token.masked_fill(out_of_room, c.eos_id).masked_fill(finished, c.pad_id)
        token_lp[:, step] = step_logp.gather(1, next_token[:, None]).squeeze(1).masked_fill(finished, 0.0)
        log_prob += token_lp[:, step]
        tokens[:, step + 1] = next_token
        finished |= next_token == c.eos_id
        if bool(finished.all()):
            break
    out = []
    rows = zip(tokens[:, 1:].tolist(), log_prob.tolist(), truncated.tolist(), token_lp.tolist(), strict=True)
    for row, lp, cut, steps in rows:
        ids = row[: row.index(c.eos_id) + 1]
        out.append(Hypothesis(ids, lp, lp, cut, tuple(steps[: len(ids)])))
    return out


def _only_eos(logp: Tensor, rows: list[bool], eos: int) -> Tensor:
    """``logp`` (B, K, V) with every token but EOS impossible in the sentences ``rows`` (at their length cap)."""
    eos_only = torch.full_like(logp, float("-inf"))
    eos_only[..., eos] = logp[..., eos]
    return torch.where(torch.tensor(rows, device=logp.device)[:, None, None], eos_only, logp)


@dataclass(frozen=True)
class _BeamRule:
    k: int  # beam size
    vocab: int
    eos: int
    length_penalty: float


def _advance(
    candidates: Iterable[tuple[float, int, float]],
    prefixes: tuple[list[list[int]], list[list[float]]],
    done: list[Hypothesis],
    ends: tuple[bool, list[bool]],
    rule: _BeamRule,
) -> list[tuple[float, int, int, float]]:
    """One sentence's step: of its best (log-prob, beam × vocab + token, token's log-prob) candidates, finish those
    that end with EOS (into ``done``) and return up to K that continue, as (log-prob, beam, token, token's log-prob).
    ``prefixes``: each beam's tokens and their log-probabilities so far."""
    out_of_room, wanted_eos = ends
    live: list[tuple[float, int, int, float]] = []
    for rank, (lp, index, token_lp) in enumerate(candidates):
        if lp == float("-inf"):
            break
        beam, token = divmod(index, rule.vocab)
        if token == rule.eos and rank >= rule.k:  # EOS counts only among the top K (as fairseq): else short
            continue  # hypotheses that merely survive in the 2K reserve would crowd out the good ones
        if token == rule.eos:
            ids, steps = prefixes[0][beam] + [token], (*prefixes[1][beam], token_lp)
            cut = out_of_room and not wanted_eos[beam]
            penalty = rule.length_penalty
            score = lp / (len(ids) ** penalty) if penalty else lp  # length-normalised, as beam search ranks
            done.append(Hypothesis(ids, lp, score, cut, steps))
            if len(done) >= rule.k:
                break
        elif len(live) < rule.k:
            live.append((lp, beam, token, token_lp))
    return live


def _dead_beams(b: int, k: int, pad: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The next step's (B, K) log-probabilities, origins, tokens and tokens' log-probabilities before any beam is
    chosen: every beam dead, continuing its own row with padding."""
    own_beam = torch.arange(k, device=device).repeat(b, 1)
    pads = torch.full((b, k), pad, dtype=torch.long, device=device)
    return torch.full((b, k), float("-inf"), device=device), own_beam, pads, torch.zeros(b, k, device=device)


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int = 4,
    length_penalty: float = 1.0,
    n_best: int = 1,
    max_len_a: float = 1.5,
    max_len_b: int = 10,
) -> list[list[Hypothesis]]:
    """Keep the ``beam_size`` best prefixes per sentence; return the ``n_best`` finished ones, best first, ranked
    by log-probability / length**length_penalty (length counts EOS)."""
    c = model.config
    if n_best > beam_size:
        raise ValueError(f"n_best ({n_best}) cannot exceed beam_size ({beam_size})")
    b, k = src.size(0), beam_size
    src_lengths = (src != c.pad_id).sum(1)
    limits = max_output_lengths(src_lengths, max_len_a, max_len_b, c.max_positions)  # (B,)
    memory, src_mask, _ = model.encode(src)
    memory = memory.repeat_interleave(k, dim=0)  # (B*K, S, d_model)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*K, 1, 1, S)
    caches = model.start_caches(memory, int(limits.max()))
    tokens = torch.full((b * k, 1), c.bos_id, dtype=torch.long, device=src.device)
    token_lps = torch.zeros(b * k, 0, device=src.device)  # (B*K, t): each beam's token log-probabilities
    beam_logp = torch.zeros(b, k, device=src.device)
    beam_logp[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    finalized: list[list[Hypothesis]] = [[] for _ in range(b)]
    first_row = torch.arange(b, device=src.device)[:, None] * k  # (B, 1): row of each sentence's first beam
    for step in range(int(limits.max())):
        logits = model.decode_step(tokens[:, -1:], caches, src_mask).logits
        logp = logits.float().log_softmax(-1).view(b, k, -1)  # (B, K, V)
        vocab = logp.size(-1)
        out_of_room = (step == limits - 1).tolist()  # these sentences: only EOS may follow
        wanted_eos = (logp.argmax(-1) == c.eos_id).tolist()  # (B, K): where the model itself would stop
        if any(out_of_room):
            logp = _only_eos(logp, out_of_room, c.eos_id)
        candidates = (beam_logp[:, :, None] + logp).view(b, k * vocab)
        top_logp, top_index = candidates.topk(2 * k, dim=1)  # (B, 2K): enough to refill K live beams
        top_token_lp = logp.reshape(b, k * vocab).gather(1, top_index)  # (B, 2K): the tokens' own log-probs
        next_beam_logp, origin, next_token, next_token_lp = _dead_beams(b, k, c.pad_id, src.device)
        prefixes, prefix_lps = tokens[:, 1:].tolist(), token_lps.tolist()
        rule = _BeamRule(k, vocab, c.eos_id, length_penalty)
        tops = zip(top_logp.tolist(), top_index.tolist(), top_token_lp.tolist(), strict=True)
        for i, (row_logp, row_index, row_token_lp) in enumerate(tops):
            if len(finalized[i]) >= k:
                continue
            candidates = zip(row_logp, row_index, row_token_lp, strict=True)
            beams = (prefixes[i * k : (i + 1) * k], prefix_lps[i * k : (i + 1) * k])
            chosen = _advance(candidates, beams, finalized[i], (out_of_room[i], wanted_eos[i]), rule)
            for live, (lp, beam, token, token_lp) in enumerate(chosen):
                next_beam_logp[i, live], origin[i, live], next_token[i, live] = lp, beam, token
                next_token_lp[i, live] = token_lp
        if all(len(f) >= k for f in finalized):
            break
        flat_origin = (origin + first_row).view(-1)  # (B*K,)
        tokens = torch.cat([tokens.index_select(0, flat_origin), next_token.view(-1, 1)], dim=1)
        token_lps = torch.cat([token_lps.index_select(0, flat_origin), next_token_lp.view(-1, 1)], dim=1)
        for cache in caches:
            cache.reorder(flat_origin)
        beam_logp = next_beam_logp
    return [sorted(f, key=lambda h: h.score, reverse=True)[:n_best] for f in finalized]
