"""The arithmetic behind one attention weight: q·k/√d_head for every key, the mask, the softmax, the row.

The model returns weights, not queries and keys, so q and k of one layer are recomputed from the model's own modules
(``attention_inputs``, the one function that knows the layers' insides) and the softmax redone in float64. A test
checks that the result equals ``model.inspect``'s map: a change in the model's layout fails a test, not the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from data.tokenizer import Tokenizer
from lab.attention.sentence_maps import Kind, SentenceMaps
from model.attention import MultiHeadAttention, causal_mask, padding_mask
from model.intervention import LayerIntervention
from model.transformer import Transformer
from viz.arithmetic import weight_text

FORMULA = (
    r"\alpha_{ij} = \operatorname{softmax}_j\left(\frac{q_i \cdot k_j}{\sqrt{d_\text{head}}} + M_{ij}\right)"
    r" = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}},"
    r"\qquad M_{ij} = \begin{cases} 0 & \text{key } j \text{ may be attended} \\"
    r" -\infty & \text{masked (the future, padding)} \end{cases}"
)
STABLE_NOTE = (
    "The softmax is computed as e^(s − max s) / Σ e^(s − max s): subtracting the largest score changes nothing "
    "in the result and keeps e^s from overflowing."
)


@dataclass(frozen=True)
class SentenceIds:
    """The ids behind a sentence's maps: x1 … xS </s> and the decoder input <s> y1 … y(T-1)."""

    src: list[int]
    tgt_in: list[int]


@dataclass(frozen=True)
class RowArithmetic:
    """Every intermediate of one softmax row, in float64; masked keys have score −inf and weight exactly 0."""

    dots: np.ndarray  # (T_k,) q · k_j
    scores: np.ndarray  # (T_k,) q · k_j / √d_head, −inf where masked
    allowed: np.ndarray  # (T_k,) bool, True = may attend
    exps: np.ndarray  # (T_k,) e^(score − max score), 0 where masked
    weights: np.ndarray  # (T_k,) exps / Σ exps


@dataclass(frozen=True)
class WeightArithmetic:
    """One query row of one layer and head, with the vectors it came from and the row the page shows."""

    kind: Kind
    layer: int
    head: int
    query: int  # row index
    query_token: str  # token the query is computed at (the decoder input for decoder and cross rows)
    predicts: str | None  # what a decoder/cross row predicts; None for the encoder
    keys: list[str]
    d_head: int
    q: np.ndarray  # (D,)
    k: np.ndarray  # (T_k, D)
    row: RowArithmetic
    shown: np.ndarray  # (T_k,) the same row of the map on the page

    @property
    def max_difference(self) -> float:
        """Largest |recomputed − shown| weight: rounding error only (about 1e-7) when all is well."""
        return float(np.abs(self.row.weights - self.shown).max()) if self.shown.size else 0.0


def softmax_row(q: np.ndarray, k: np.ndarray, allowed: np.ndarray) -> RowArithmetic:
    """Scaled dot products of ``q`` (D,) with each key of ``k`` (T_k, D), masked, then a softmax."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    allowed = np.asarray(allowed, dtype=bool)
    dots = k @ q  # (T_k,)
    scores = np.where(allowed, dots / math.sqrt(q.shape[-1]), -np.inf)
    top = scores[allowed].max() if allowed.any() else 0.0
    exps = np.where(allowed, np.exp(scores - top), 0.0)  # exp(-inf) would be 0 too; this says so without a warning
    total = exps.sum()
    weights = exps / total if total > 0 else exps
    return RowArithmetic(dots, scores, allowed, exps, weights)


def allowed_keys(model: Transformer, ids: SentenceIds, kind: Kind) -> np.ndarray:
    """(T_q, T_k) bool, True where a query may attend: the model's own padding and causal masks."""
    pad = model.config.pad_id
    src = torch.tensor([ids.src])  # (1, S)
    tgt_in = torch.tensor([ids.tgt_in])  # (1, T)
    if kind == "decoder":
        mask = causal_mask(len(ids.tgt_in)) & padding_mask(tgt_in, pad)  # (1, 1, T, T)
    else:
        mask = padding_mask(src, pad).expand(1, 1, len(ids.src if kind == "encoder" else ids.tgt_in), len(ids.src))
    return mask[0, 0].numpy()


@dataclass(frozen=True)
class LayerVectors:
    """One attention layer's queries, keys and values per head, and its output as the model computes it."""

    q: np.ndarray  # (H, T_q, D)
    k: np.ndarray  # (H, T_k, D)
    v: np.ndarray  # (H, T_k, D)
    out: np.ndarray  # (T_q, d_model) the sublayer's output: W_O · concat(heads) + b_O (before dropout and residual)


def attention_inputs(
    model: Transformer, ids: SentenceIds, kind: Kind, layer: int
) -> tuple[MultiHeadAttention, Tensor, Tensor, Tensor | None]:
    """The attention module of one layer, its queries (1, H, T_q, D), keys/values (2, 1, H, T_k, D) and mask: layers
    below ``layer`` run through their ``forward``; inside ``layer`` the attention's input is rebuilt as it builds it."""
    device = next(model.parameters()).device
    src = torch.tensor([ids.src], device=device)  # (1, S)
    tgt_in = torch.tensor([ids.tgt_in], device=device)  # (1, T)
    if kind == "encoder":
        src_mask = padding_mask(src, model.config.pad_id)
        x = model.embed(src, model.src_embed, model.src_pos)  # (1, S, d_model)
        for below in model.encoder_layers[:layer]:
            x, _ = below(x, src_mask)
        block = model.encoder_layers[layer]
        q, kv = block.self_attn.project_qkv(block.self_attn_norm.sublayer_input(x))
        return block.self_attn, q, kv, src_mask
    memory, src_mask, _ = model.encode(src)
    tgt_mask = causal_mask(tgt_in.size(1), device) & padding_mask(tgt_in, model.config.pad_id)  # (1, 1, T, T)
    y = model.embed(tgt_in, model.tgt_embed, model.tgt_pos)  # (1, T, d_model)
    for below in model.decoder_layers[:layer]:
        y, _, _ = below(y, memory, src_mask, tgt_mask)
    block = model.decoder_layers[layer]
    h = block.self_attn_norm.sublayer_input(y)
    if kind == "decoder":
        q, kv = block.self_attn.project_qkv(h)
        return block.self_attn, q, kv, tgt_mask
    attn_out, _ = block.masked_self_attention(h, tgt_mask, None, LayerIntervention(self_weights=True))  # as inspect()
    y = block.self_attn_norm.residual(y, attn_out)  # eval: dropout is the identity
    q = block.cross_attn.project_q(block.cross_attn_norm.sublayer_input(y))  # (1, H, T, D)
    return block.cross_attn, q, block.cross_attn.project_kv(memory), src_mask


@torch.inference_mode()
def layer_vectors(model: Transformer, ids: SentenceIds, kind: Kind, layer: int) -> LayerVectors:
    """Queries, keys, values of one attention layer and its output (the model's own attention call on them)."""
    if model.training:
        raise ValueError("the model is in training mode (dropout): call .eval() first")
    attention, q, kv, mask = attention_inputs(model, ids, kind, layer)
    out, _ = attention.attend(q, kv, mask)  # (1, T_q, d_model)
    return LayerVectors(*(t.float().cpu().numpy() for t in (q[0], kv[0, 0], kv[1, 0], out[0])))


def sentence_ids(tokenizer: Tokenizer, maps: SentenceMaps) -> SentenceIds:
    """Ids of the pieces shown on the page (SentencePiece pieces and ids are one-to-one)."""
    src = [tokenizer.src.piece_to_id(p) for p in maps.src]
    tgt_in = [tokenizer.tgt.piece_to_id(p) for p in maps.tgt_in]
    if tokenizer.src_pieces(src) != maps.src or tokenizer.tgt_pieces(tgt_in) != maps.tgt_in:
        raise ValueError("these maps were not made with this tokenizer")
    return SentenceIds(src, tgt_in)


def weight_arithmetic(
    model: Transformer, tokenizer: Tokenizer, maps: SentenceMaps, kind: Kind, layer: int, head: int, query: int
) -> WeightArithmetic:
    """The arithmetic of row ``query`` of one layer and head of ``maps`` (subword level, as the model computes)."""
    ids = sentence_ids(tokenizer, maps)
    vectors = layer_vectors(model, ids, kind, layer)
    q, k = vectors.q, vectors.k  # (H, T_q, D), (H, T_k, D)
    allowed = allowed_keys(model, ids, kind)  # (T_q, T_k)
    rows, cols = maps.labels(kind)
    query_token = maps.src[query] if kind == "encoder" else maps.tgt_in[query]
    return WeightArithmetic(
        kind=kind,
        layer=layer,
        head=head,
        query=query,
        query_token=query_token,
        predicts=None if kind == "encoder" else rows[query],
        keys=list(cols),
        d_head=int(q.shape[-1]),
        q=q[head, query],
        k=k[head],
        row=softmax_row(q[head, query], k[head], allowed[query]),
        shown=np.asarray(maps.weights(kind)[layer, head, query], dtype=np.float64),
    )


def why_zero(arithmetic: WeightArithmetic) -> str:
    """One sentence on the masked keys of the row: why their weights are exactly 0 (empty when none are)."""
    masked = [key for key, ok in zip(arithmetic.keys, arithmetic.row.allowed, strict=True) if not ok]
    if not masked:
        return ""
    if arithmetic.kind == "decoder":
        return (
            f"The {len(masked)} key(s) after position {arithmetic.query + 1} ({', '.join(masked[:5])}"
            f"{', …' if len(masked) > 5 else ''}) are the future: when the model generates this token they do not "
            "exist yet. The mask adds −∞ to their scores, e^−∞ = 0, so their weights are exactly 0 — not small — "
            "and the visible keys share all of the weight."
        )
    return f"{len(masked)} key(s) are padding: the mask adds −∞ to their scores, so their weights are exactly 0."


def worked_example(arithmetic: WeightArithmetic, key: int | None = None) -> str:
    """LaTeX for one key's weight with the numbers filled in (default: the key with the largest weight)."""
    row = arithmetic.row
    j = int(np.argmax(row.weights)) if key is None else key
    token = arithmetic.keys[j].replace("\\", "").replace("{", "").replace("}", "").replace("_", r"\_")
    if not row.allowed[j]:
        return rf"s_{{{j + 1}}} = -\infty \;\Rightarrow\; \alpha_{{{j + 1}}} = e^{{-\infty}} / \textstyle\sum = 0"
    top = float(row.scores[row.allowed].max())
    minus_top = f"- ({top:.3f})" if top < 0 else f"- {top:.3f}"  # e^{-0.521 - (-0.521)}, never "- -0.521"
    return (
        rf"\text{{key {j + 1} ({token})}}:\; s = \frac{{q \cdot k}}{{\sqrt{{{arithmetic.d_head}}}}}"
        rf" = \frac{{{row.dots[j]:.3f}}}{{{np.sqrt(arithmetic.d_head):.3f}}} = {row.scores[j]:.3f},\quad"
        rf"\alpha = \frac{{e^{{{row.scores[j]:.3f} {minus_top}}}}}{{{row.exps.sum():.3f}}}"
        rf" = \frac{{{weight_text(row.exps[j])}}}{{{row.exps.sum():.3f}}} = {weight_text(row.weights[j])}"
    )
