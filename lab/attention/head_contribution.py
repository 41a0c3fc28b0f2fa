"""After the softmax: the value vectors, the weighted sum, the head's slice of W_O, and the way to the logits.

For one query row of one head: context = Σ_j α_j v_j (D,), the head's context vector; the layer concatenates the
H contexts and applies W_O (d_model × H·D) and b_O, so head h contributes W_O[:, h·D:(h+1)·D] · context_h and the
layer's output is Σ_h contribution_h + b_O (tested against the model's own output, forward hook included).

For the last decoder layer the page follows the contribution to the logit of the token the row predicts. That path is
not linear (the feed-forward after it reads it, the final LayerNorm divides by a scale that depends on it), so three
figures are given: the direct path u·c (u the token's output row), the same through the final norm with its scale
held (an exact term of the logit's decomposition), and the exact total effect: the logit with the head switched off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from data.tokenizer import Tokenizer
from lab.attention.sentence_maps import Kind, SentenceMaps
from lab.attention.weight_arithmetic import SentenceIds, allowed_keys, layer_vectors, sentence_ids, softmax_row
from lab.whatif.head_ablation import Head, switched_off
from model.attention import MultiHeadAttention, causal_mask, padding_mask
from model.intervention import Intervention
from model.transformer import Transformer

TOP_VALUES = 5  # value vectors shown one by one; the rest are summed


@dataclass(frozen=True)
class RowAt:
    """One query row of one head: the kind of attention, its layer, head and row (0-based)."""

    kind: Kind
    layer: int
    head: int
    query: int


def attention_module(model: Transformer, kind: Kind, layer: int) -> MultiHeadAttention:
    """The attention of ``kind`` in layer ``layer``: its out_proj is W_O, columns h·D … (h+1)·D for head h."""
    if kind == "encoder":
        return model.encoder_layers[layer].self_attn
    block = model.decoder_layers[layer]
    return block.self_attn if kind == "decoder" else block.cross_attn


@dataclass(frozen=True)
class HeadContribution:
    """One head's output at one query row: values, weights, context vector, and what W_O makes of it."""

    keys: list[str]
    weights: np.ndarray  # (T_k,) the softmax row, float64
    values: np.ndarray  # (T_k, D) this head's value vectors
    top: np.ndarray  # (≤ TOP_VALUES,) key indices of the largest weights, largest first
    context: np.ndarray  # (D,) Σ_j α_j v_j
    w_o: np.ndarray  # (d_model, D) this head's columns of W_O
    contribution: np.ndarray  # (d_model,) w_o · context
    head_norms: np.ndarray  # (H,) ‖contribution‖ of every head at this row
    layer_difference: float  # max |Σ_h contribution_h + b_O − the layer's own output|: rounding only

    @property
    def rest(self) -> np.ndarray:
        """Key indices not among ``top`` (masked keys included: their weight is exactly 0)."""
        return np.setdiff1d(np.arange(len(self.weights)), self.top)

    @property
    def rest_sum(self) -> np.ndarray:
        """(D,) Σ_j α_j v_j over the keys not shown one by one."""
        return self.weights[self.rest] @ self.values[self.rest]


def head_contribution(model: Transformer, ids: SentenceIds, at: RowAt, keys: list[str]) -> HeadContribution:
    """The rest of one row of one head, in float64 from the model's own vectors and weights; ``keys`` label it."""
    vectors = layer_vectors(model, ids, at.kind, at.layer)  # q, k, v (H, T, D); out (T_q, d_model)
    allowed = allowed_keys(model, ids, at.kind)[at.query]  # (T_k,)
    attention = attention_module(model, at.kind, at.layer)
    w_o = attention.out_proj.weight.detach().double().cpu().numpy()  # (d_model, H·D)
    bias = attention.out_proj.bias.detach().double().cpu().numpy()  # (d_model,)
    n_heads, _, d = vectors.v.shape
    contributions = []
    for h in range(n_heads):
        weights = softmax_row(vectors.q[h, at.query], vectors.k[h], allowed).weights  # (T_k,)
        context = weights @ vectors.v[h].astype(np.float64)  # (D,)
        contributions.append((weights, context, w_o[:, h * d : (h + 1) * d] @ context))
    weights, context, contribution = contributions[at.head]
    total = sum(c for _, _, c in contributions) + bias
    return HeadContribution(
        keys=keys,
        weights=weights,
        values=vectors.v[at.head].astype(np.float64),
        top=np.argsort(-weights, kind="stable")[: min(TOP_VALUES, int(allowed.sum()))],
        context=context,
        w_o=w_o[:, at.head * d : (at.head + 1) * d],
        contribution=contribution,
        head_norms=np.array([np.linalg.norm(c) for _, _, c in contributions]),
        layer_difference=float(np.abs(total - vectors.out[at.query]).max()),
    )


@dataclass(frozen=True)
class LogitPath:
    """How one last-layer head's contribution reaches the logit of the token its row predicts."""

    logit: float  # the model's logit of ``token`` at this row
    log_prob: float  # log p(token | source, prefix)
    direct: float  # u · contribution: the direct path, ignoring the final norm and the feed-forward after it
    through_norm: float | None  # u · γ ⊙ (c − mean c) / σ, σ held at its value (pre-norm models; None otherwise)
    norm_scale: float | None  # that σ: the final norm divides the whole residual stream by it
    logit_off: float  # the logit with this head switched off (exact, one more pass)
    log_prob_off: float

    @property
    def total_effect(self) -> float:
        """What the head adds to the logit, all paths together: logit − logit with the head off."""
        return self.logit - self.logit_off


def frozen_norm_term(model: Transformer, residual: torch.Tensor, vector: torch.Tensor, token: int) -> float:
    """u · γ ⊙ (vector − mean vector) / σ(residual): ``vector``'s exact share of the token's logit, with the final
    norm's scale σ held at its value for ``residual`` (d_model,). Summed over everything added to the residual
    stream, plus u · β, these terms give the logit exactly (tested)."""
    centred = vector.double().cpu() - vector.double().cpu().mean()
    u = model.output.weight[token].detach().double().cpu()
    return float(u @ (model.decoder_norm.weight.detach().double().cpu() * centred)) / norm_scale(model, residual)


def norm_scale(model: Transformer, residual: torch.Tensor) -> float:
    """σ = √(var + ε) of ``residual`` (d_model,): what the final LayerNorm divides the centred residual by."""
    return math.sqrt(float(residual.double().var(unbiased=False)) + model.decoder_norm.eps)


@torch.inference_mode()
def final_residuals(model: Transformer, ids: SentenceIds, intervention: Intervention | None = None) -> torch.Tensor:
    """(T, d_model) the decoder's residual stream after its last layer, before the final norm, one forced pass."""
    device = next(model.parameters()).device
    src = torch.tensor([ids.src], device=device)  # (1, S)
    tgt_in = torch.tensor([ids.tgt_in], device=device)  # (1, T)
    memory, src_mask, _ = model.encode(src, intervention=intervention)
    tgt_mask = causal_mask(tgt_in.size(1), device) & padding_mask(tgt_in, model.config.pad_id)  # (1, 1, T, T)
    y = model.embed(tgt_in, model.tgt_embed, model.tgt_pos)  # (1, T, d_model)
    what = intervention or Intervention()
    for i, block in enumerate(model.decoder_layers):
        y, _, _ = block(y, memory, src_mask, tgt_mask, what=what.decoder_layer(i))
    return y[0]


@torch.inference_mode()
def logit_path(model: Transformer, ids: SentenceIds, at: RowAt, contribution: np.ndarray, token: int) -> LogitPath:
    """How ``contribution`` (d_model,) of the head at ``at`` (last decoder layer) reaches the logit of ``token``."""
    if not follows_to_logits(model, at.kind, at.layer):
        raise ValueError("the logit path is followed from the decoder and cross heads of the last layer only")
    vector = torch.from_numpy(contribution)
    rows = []
    for intervention in (None, switched_off(model, [Head(at.kind, at.layer, at.head)])):
        residual = final_residuals(model, ids, intervention)[at.query]  # (d_model,)
        logits = model.output(model.decoder_norm(residual)).double()  # (V,)
        rows.append((residual, float(logits[token]), float(logits.log_softmax(-1)[token])))
    (residual, logit, log_prob), (_, logit_off, log_prob_off) = rows
    pre_norm = model.config.norm == "pre"
    return LogitPath(
        logit=logit,
        log_prob=log_prob,
        direct=float(model.output.weight[token].detach().double().cpu() @ vector),
        through_norm=frozen_norm_term(model, residual, vector, token) if pre_norm else None,
        norm_scale=norm_scale(model, residual) if pre_norm else None,
        logit_off=logit_off,
        log_prob_off=log_prob_off,
    )


def follows_to_logits(model: Transformer, kind: Kind, layer: int) -> bool:
    """Whether the page follows this layer's heads to the logits: decoder or cross heads of the last layer."""
    return kind != "encoder" and layer == model.config.n_decoder_layers - 1


def contribution_of_row(
    model: Transformer, tokenizer: Tokenizer, maps: SentenceMaps, at: RowAt
) -> tuple[HeadContribution, LogitPath | None]:
    """The page's row: the head's contribution and, for the last decoder layer, its path to the predicted token."""
    ids = sentence_ids(tokenizer, maps)
    contribution = head_contribution(model, ids, at, list(maps.labels(at.kind)[1]))
    if not follows_to_logits(model, at.kind, at.layer):
        return contribution, None
    token = tokenizer.tgt.piece_to_id(maps.tgt_out[at.query])
    return contribution, logit_path(model, ids, at, contribution.contribution, token)
