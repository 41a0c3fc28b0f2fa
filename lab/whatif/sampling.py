"""Sampling: draw a translation token by token from the model's distribution, reshaped by temperature, top-k, top-p.

Temperature T divides the logits (T < 1 sharpens, T > 1 flattens); top-k keeps the k most probable tokens; top-p
keeps the smallest set of most probable tokens whose probability reaches p (nucleus). The kept tokens are
renormalised and one is drawn with a seeded generator: the same seed and settings give the same output.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from lab.attention.step_choices import next_token_log_probs
from lab.whatif.steering import output_limit, output_log_probs
from model.transformer import Transformer


@dataclass(frozen=True)
class SamplingRule:
    temperature: float = 1.0  # > 0
    top_k: int = 0  # 0: every token
    top_p: float = 1.0  # 1: every token


def reshaped(log_probs: Tensor, rule: SamplingRule) -> tuple[Tensor, Tensor]:
    """(…, V) log-probabilities -> (after temperature, after temperature and top-k/top-p, renormalised): probabilities."""
    tempered = (log_probs / max(rule.temperature, 1e-6)).softmax(-1)  # (…, V)
    keep = torch.ones_like(tempered, dtype=torch.bool)
    order = tempered.argsort(-1, descending=True)  # (…, V)
    ranked = tempered.gather(-1, order)
    if rule.top_k > 0:
        keep_ranked = torch.arange(ranked.size(-1), device=ranked.device) < rule.top_k
        keep &= keep_ranked.expand_as(ranked).scatter(-1, order, keep_ranked.expand_as(ranked))
    if rule.top_p < 1.0:
        before = ranked.cumsum(-1) - ranked  # probability of the more probable tokens
        nucleus = before < rule.top_p  # the most probable token is always kept
        keep &= torch.zeros_like(keep).scatter(-1, order, nucleus)
    kept = tempered * keep
    return tempered, kept / kept.sum(-1, keepdim=True)


@dataclass(frozen=True)
class Sampled:
    tokens: list[int]  # EOS last
    log_prob: float  # log p(output | source) under the model itself (temperature 1, nothing cut): teacher-forced
    truncated: bool  # the length limit forced EOS


@torch.inference_mode()
def sample(model: Transformer, src_ids: list[int], rule: SamplingRule, seed: int) -> Sampled:
    """One output drawn step by step (with the key/value cache) under ``rule``, reproducible by ``seed``."""
    c = model.config
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    limit = output_limit(model, src_ids)
    memory, src_mask, _ = model.encode(torch.tensor([src_ids], device=device))
    caches = model.start_caches(memory, limit)
    tokens: list[int] = []
    last = c.bos_id
    for position in range(limit):
        logits = model.decode_step(torch.tensor([[last]], device=device), caches, src_mask).logits  # (1, V)
        _, probs = reshaped(logits.float().log_softmax(-1), rule)
        last = c.eos_id if position == limit - 1 else int(torch.multinomial(probs, 1, generator=generator))
        tokens.append(last)
        if last == c.eos_id:
            break
    cut = len(tokens) == limit and tokens[-1] == c.eos_id and probs[0].argmax() != c.eos_id
    return Sampled(tokens, float(output_log_probs(model, src_ids, tokens).sum()), bool(cut))


def step_distribution(
    model: Transformer, src_ids: list[int], out_ids: list[int], step: int, rule: SamplingRule
) -> tuple[Tensor, Tensor, Tensor]:
    """At output position ``step`` of ``out_ids``: the model's probabilities, after temperature, after the cut: (V,)."""
    tgt_in = [model.config.bos_id, *out_ids[:step]]
    log_probs = next_token_log_probs(model, src_ids, tgt_in)[step]  # (V,)
    tempered, kept = reshaped(log_probs, rule)
    return log_probs.exp(), tempered, kept
