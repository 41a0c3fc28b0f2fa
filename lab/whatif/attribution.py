"""Attribution beside attention: how much each source subword and each English subword written so far moved the
log-probability of one output token (or, contrastively, of that token rather than another).

The inputs are the token vectors (√d_model-scaled embeddings, before positions are added); the baseline gives every
token the zero vector (positions kept). Per token, an attribution is (input − baseline) · a gradient, over d_model:
input × gradient takes the gradient at the input itself; integrated gradients (Sundararajan et al. 2017) average it
over ``steps`` points on the straight line from the baseline to the input (midpoint rule), so that the attributions
sum to f(input) − f(baseline) up to the rule's error (the page prints the gap). Gradients are taken with
``torch.autograd.grad`` for the input vectors only: nothing accumulates on the shared model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from model.intervention import Intervention
from model.transformer import Transformer

IG_STEPS = 64  # default points on the path; the completeness gap they leave varies by sentence: the page prints it
MAX_IG_STEPS = 128  # the page never asks for more
# points × subwords (source + English so far) of one attribution: ≈ 3 CPU s, 7 s at load 8 (bench requests)
MAX_IG_WORK = 8_000
POINT_BATCH = 16  # points per pass: 128 points of a 48-subword request at once took +606 MB, 16 at a time +78 MB


@dataclass(frozen=True)
class Attribution:
    """Attributions of f = log p(target) [− log p(contrast)] at output position ``step``."""

    step: int  # f is read at decoder input position ``step``, predicting output token ``step``
    src_grad_x_input: np.ndarray  # (S,) over x1 … xS </s>
    tgt_grad_x_input: np.ndarray  # (step + 1,) over <s> y1 … y(step)
    src_integrated: np.ndarray  # (S,)
    tgt_integrated: np.ndarray  # (step + 1,)
    value: float  # f(input)
    baseline_value: float  # f(baseline): every token vector zero
    steps: int

    @property
    def completeness_gap(self) -> float:
        """Σ integrated gradients − (f(input) − f(baseline)): 0 for the exact integral."""
        total = float(self.src_integrated.sum() + self.tgt_integrated.sum())
        return total - (self.value - self.baseline_value)

    def source_share(self) -> float:
        """Share of |integrated gradients| on the source (the rest is on the English written so far)."""
        src, tgt = np.abs(self.src_integrated).sum(), np.abs(self.tgt_integrated).sum()
        return float(src / (src + tgt)) if src + tgt > 0 else math.nan


def _objective(
    model: Transformer, ids: tuple[Tensor, Tensor], vectors: tuple[Tensor, Tensor], step: int, tokens: tuple[int, ...]
) -> Tensor:
    """f for a batch of token vectors: (B,). ``ids``: src (1, S), tgt_in (1, step + 1); ``tokens``: target[, contrast]."""
    src, tgt_in = ids
    src_vectors, tgt_vectors = vectors  # (B, S, d_model), (B, step + 1, d_model)
    b = src_vectors.size(0)
    what = Intervention(src_vectors=src_vectors, tgt_vectors=tgt_vectors)
    memory, src_mask, _ = model.encode(src.expand(b, -1), intervention=what)
    hidden = model.decode(tgt_in.expand(b, -1), memory, src_mask, intervention=what).hidden[:, step]  # (B, d_model)
    log_probs = model.output(hidden).float().log_softmax(-1)  # (B, V)
    f = log_probs[:, tokens[0]]
    return f - log_probs[:, tokens[1]] if len(tokens) > 1 else f


def _gradients(
    model: Transformer, ids: tuple[Tensor, Tensor], vectors: tuple[Tensor, Tensor], step: int, tokens: tuple[int, ...]
) -> tuple[Tensor, Tensor, Tensor]:
    """f and its gradients with respect to both batches of token vectors."""
    with torch.enable_grad():
        src_v, tgt_v = (v.detach().requires_grad_(True) for v in vectors)
        f = _objective(model, ids, (src_v, tgt_v), step, tokens)
        src_g, tgt_g = torch.autograd.grad(f.sum(), [src_v, tgt_v])
    return f.detach(), src_g, tgt_g


def token_vectors(model: Transformer, src_ids: list[int], prefix: list[int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(src (1, S), tgt_in (1, P + 1) = <s> + prefix, and their √d_model-scaled token vectors (1, ·, d_model), detached):
    what attribution differentiates with respect to. Refuses a model in training mode (dropout would add noise)."""
    if model.training:
        raise ValueError("the model is in training mode (dropout): call .eval() first")
    device = next(model.parameters()).device
    scale = math.sqrt(model.config.d_model)
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([[model.config.bos_id, *prefix]], device=device)  # (1, P + 1)
    return src, tgt_in, (model.src_embed(src) * scale).detach(), (model.tgt_embed(tgt_in) * scale).detach()


def attribute(
    model: Transformer,
    src_ids: list[int],
    out_ids: list[int],
    step: int,
    contrast: int | None = None,
    steps: int = IG_STEPS,
) -> Attribution:
    """Attributions of output token ``out_ids[step]`` (minus ``contrast``'s log-probability when given); ValueError,
    before any pass, when the integration would exceed ``MAX_IG_WORK``."""
    steps = max(1, min(steps, MAX_IG_STEPS))
    subwords = len(src_ids) + step + 1
    if steps * subwords > MAX_IG_WORK:
        raise ValueError(
            f"{steps} points × {subwords} subwords (the source and the output so far) exceed integrated "
            f"gradients' limit of {MAX_IG_WORK:,}: take at most {MAX_IG_WORK // subwords} points for this token"
        )
    src, tgt_in, x_src, x_tgt = token_vectors(model, src_ids, out_ids[:step])  # tgt_in: (1, step + 1)
    tokens = (out_ids[step],) if contrast is None else (out_ids[step], contrast)
    ids = (src, tgt_in)
    value, g_src, g_tgt = _gradients(model, ids, (x_src, x_tgt), step, tokens)
    with torch.no_grad():
        baseline = float(_objective(model, ids, (x_src * 0, x_tgt * 0), step, tokens)[0])
    alphas = (torch.arange(steps, device=x_src.device, dtype=x_src.dtype)[:, None, None] + 0.5) / steps  # (steps, 1, 1)
    paths = [_gradients(model, ids, (a * x_src, a * x_tgt), step, tokens)[1:] for a in alphas.split(POINT_BATCH)]
    path_src, path_tgt = (torch.cat(grads) for grads in zip(*paths, strict=True))

    def per_token(x: Tensor, grad: Tensor) -> np.ndarray:
        return (x[0] * grad).sum(-1).double().cpu().numpy()  # (tokens,): dot product over d_model

    return Attribution(
        step,
        per_token(x_src, g_src[0]),
        per_token(x_tgt, g_tgt[0]),
        per_token(x_src, path_src.mean(0)),
        per_token(x_tgt, path_tgt.mean(0)),
        float(value[0]),
        baseline,
        steps,
    )
