"""Alignments from attribution instead of attention: each English word linked to the Spanish words that moved its
log-probability most (lab/whatif/attribution.py: input × gradient, integrated gradients over the source tokens).

The model is forced to write the reference, as for the attention readings; each output token gets one row of
attribution over the source subwords, read like a row of cross-attention: magnitudes (|x·g|, ‖x ⊙ g‖, |IG|),
source EOS left out, subwords joined into gold words (columns summed, rows averaged), each row then a share of its
total, and the same extractions (argmax, threshold, intersection, grow-diag-final-and) and row readings
("predicts": the step that outputs the word; "shift": the step where it is the decoder input, predicting the next).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from lab.alignment.links import READINGS, Reading, target_rows
from lab.alignment.methods import Extraction, extract, gold_ids
from lab.alignment.scoring import GoldPair, Link, Score, score, word_matrix
from lab.whatif.attribution import MAX_IG_STEPS, token_vectors
from model.intervention import Intervention
from model.transformer import Transformer
from translate.translator import Translator

# --- every output step at once: one source row per output token ---

ROW_BATCH = 32  # sequences per batched pass: bounds memory when every step (× integration points) is attributed


@dataclass(frozen=True)
class SourceRows:
    """Attribution over the source subwords x1 … xS </s> of every output token: row t is ``attribute(..., t)``'s."""

    grad_x_input: np.ndarray  # (T, S) x·g, as ``Attribution.src_grad_x_input``
    grad_x_input_norm: np.ndarray  # (T, S) ‖x ⊙ g‖₂ over d_model: the size of the contribution, whatever its sign
    integrated: np.ndarray | None  # (T, S) as ``Attribution.src_integrated``; None when no steps were asked for
    steps: int  # integration points (0: integrated gradients not computed)


def _row_source_gradients(
    model: Transformer, ids: tuple[Tensor, Tensor], vectors: tuple[Tensor, Tensor], at: Tensor, tokens: Tensor
) -> Tensor:
    """(B, S, d_model): gradient of sequence b's log p(tokens[b]) at decoder position at[b] w.r.t. its source
    vectors. The B sequences are independent, so one backward of the sum gives every row its own gradient."""
    src, tgt_in = ids
    b = at.numel()
    with torch.enable_grad():
        src_v = vectors[0].detach().requires_grad_(True)  # (B, S, d_model)
        what = Intervention(src_vectors=src_v, tgt_vectors=vectors[1])
        memory, src_mask, _ = model.encode(src.expand(b, -1), intervention=what)
        hidden = model.decode(tgt_in.expand(b, -1), memory, src_mask, intervention=what).hidden  # (B, T, d_model)
        log_probs = model.output(hidden[torch.arange(b), at]).float().log_softmax(-1)  # (B, V)
        (grad,) = torch.autograd.grad(log_probs.gather(1, tokens[:, None]).sum(), [src_v])
    return grad


def source_rows(model: Transformer, src_ids: list[int], out_ids: list[int], steps: int = 0) -> SourceRows:
    """Input × gradient (and, for ``steps`` > 0, integrated gradients on ``steps`` points, the same path and zero
    baseline as ``attribute``) of every output token ``out_ids[t]`` over the source, batched across steps.

    Each step t is its own sequence, reading position t of the teacher-forced input <s> y1 … (causal masking makes
    the later positions irrelevant, as ``attribute``'s shorter prefix does): T·(1 + steps) passes, ``ROW_BATCH``
    at a time."""
    steps = max(0, min(steps, MAX_IG_STEPS))
    device = next(model.parameters()).device
    src, tgt_in, x_src, x_tgt = token_vectors(model, src_ids, out_ids[:-1])  # tgt_in: (1, T)
    n = len(out_ids)
    alphas = [1.0] + [(k + 0.5) / steps for k in range(steps)]  # the input itself, then the path's midpoints
    jobs = [(t, a) for a in range(len(alphas)) for t in range(n)]  # (output step, point), in order of steps
    grads = torch.zeros(len(alphas), n, *x_src.shape[1:], dtype=x_src.dtype, device=device)  # (P, T, S, d_model)
    for start in range(0, len(jobs), ROW_BATCH):
        chunk = jobs[start : start + ROW_BATCH]
        at = torch.tensor([t for t, _ in chunk], device=device)  # (B,)
        alpha = torch.tensor([alphas[a] for _, a in chunk], device=device, dtype=x_src.dtype)[:, None, None]
        upto = int(at.max()) + 1  # later decoder positions cannot matter: leave them out
        vectors = (alpha * x_src, alpha * x_tgt[:, :upto])  # (B, S, d_model), (B, upto, d_model)
        tokens = torch.tensor([out_ids[t] for t, _ in chunk], device=device)
        grad = _row_source_gradients(model, (src, tgt_in[:, :upto]), vectors, at, tokens)
        for (t, a), g in zip(chunk, grad, strict=True):
            grads[a, t] = g
    products = x_src * grads  # (P, T, S, d_model)
    integrated = products[1:].mean(0).sum(-1).double().cpu().numpy() if steps else None
    return SourceRows(
        products[0].sum(-1).double().cpu().numpy(),
        products[0].norm(dim=-1).double().cpu().numpy(),
        integrated,
        steps,
    )


AttributionKind = Literal["grad_x_input", "grad_x_input_norm", "integrated"]
KINDS: dict[AttributionKind, str] = {
    "grad_x_input": "input × gradient, |x·g|",
    "grad_x_input_norm": "input × gradient, ‖x ⊙ g‖",
    "integrated": "integrated gradients, |IG|",
}
ATTRIBUTION_EXTRACTIONS: tuple[Extraction, ...] = ("argmax", "threshold", "intersection", "grow-diag-final-and")


def row_shares(weights: np.ndarray) -> np.ndarray:
    """Each row divided by its total (rows without any weight stay zero)."""
    sums = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)


@dataclass(frozen=True)
class AttributedPair:
    """Attribution of one forced pass over a gold pair, read at the gold words: (n_target, n_source) per kind and
    reading, each row a share of its total over the real source words."""

    words: dict[tuple[AttributionKind, Reading], np.ndarray]
    steps: int  # integration points of the "integrated" kind (0: not computed)


def attributed_pair(
    rows: SourceRows, target_words: list[int], source_words: list[int], shape: tuple[int, int]
) -> AttributedPair:
    """(T, S) rows as ``source_rows`` returns them (row t for output token t, last column the source EOS) -> every
    kind and reading at the gold words; ``shape`` is (gold target words, gold source words)."""
    words = {}
    for kind in KINDS:
        matrix = getattr(rows, kind)
        if matrix is None:
            continue
        magnitude = np.abs(matrix)[:, :-1]  # (T, S-1): source EOS left out, as before an attention argmax
        for reading in READINGS:
            merged = word_matrix(target_rows(magnitude, reading), target_words, source_words, *shape)
            words[(kind, reading)] = row_shares(merged)
    return AttributedPair(words, rows.steps)


def attribute_gold(translator: Translator, pair: GoldPair, steps: int = 0) -> AttributedPair:
    """Feed the Spanish side, force the English side, attribute every output token (``steps`` integration points
    for integrated gradients, 0 for input × gradient only) and map both axes back to the gold words."""
    ids = gold_ids(translator, pair)
    with torch.no_grad():
        rows = source_rows(translator.model, ids.src_ids, ids.tgt_ids, steps)
    return attributed_pair(rows, ids.target_words, ids.source_words, (len(pair.target), len(pair.source)))


@dataclass(frozen=True)
class AttributionMethod:
    """One reading of alignments off attribution: kind, rows, extraction (and the threshold's share)."""

    kind: AttributionKind
    reading: Reading
    extraction: Extraction
    tau: float | None = None
    steps: int = 0  # integration points, for the "integrated" kind

    @property
    def name(self) -> str:
        """ "attribution, input × gradient, |x·g|, predicts: argmax"."""
        how = f"threshold {self.tau:g}" if self.extraction == "threshold" else self.extraction
        points = f" ({self.steps} points)" if self.kind == "integrated" else ""
        return f"attribution, {KINDS[self.kind]}{points}, {self.reading}: {how}"

    def word_weights(self, pair: AttributedPair) -> np.ndarray:
        """(gold target words, gold source words): the attribution shares this method reads its links from."""
        return pair.words[(self.kind, self.reading)]

    def links(self, pair: AttributedPair) -> set[Link]:
        return extract(self.word_weights(pair), self.extraction, self.tau)

    def fields(self) -> dict[str, Any]:
        """Machine-readable choice; ``attribution`` names the kind (attention records have no such key)."""
        steps = self.steps if self.kind == "integrated" else None
        return {"attribution": self.kind, "extraction": self.extraction, "reading": self.reading} | {
            "threshold": self.tau,
            "integration_steps": steps,
        }

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> AttributionMethod:
        """The method ``fields()`` describes; KeyError or ValueError when it is not one."""
        kind, extraction, reading = fields["attribution"], fields["extraction"], fields["reading"]
        if kind not in KINDS or extraction not in ATTRIBUTION_EXTRACTIONS or reading not in READINGS:
            raise ValueError(f"unknown attribution {kind!r}, extraction {extraction!r} or reading {reading!r}")
        tau, steps = fields.get("threshold"), fields.get("integration_steps")
        return cls(kind, reading, extraction, None if tau is None else float(tau), int(steps or 0))

    def score_on(self, pair: AttributedPair, gold: GoldPair) -> Score:
        """Precision, recall and AER of this method on one gold pair, counted as the bench counts a whole set."""
        return score([self.links(pair)], [gold.links])
