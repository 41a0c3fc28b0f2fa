"""Switch heads off: zero chosen heads' outputs, re-decode, and measure what the original output loses.

A head is switched off by multiplying its context vectors by 0 before W_O (``model.intervention``), which equals
zeroing its columns of W_O (tested). The scan switches off one head at a time: one forced pass per head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from lab.whatif.steering import GREEDY, Steered, output_log_probs, search
from model.intervention import Intervention
from model.transformer import Transformer
from translate.translator import DecodeOptions

HeadKind = Literal["encoder", "decoder", "cross"]
HEAD_KINDS: tuple[HeadKind, ...] = ("encoder", "decoder", "cross")
MAX_SCANNED = 96  # heads the scan switches off one by one: every head of a model with up to this many (all_heads)


@dataclass(frozen=True, order=True)
class Head:
    """One head of one kind of attention, 0-based."""

    kind: HeadKind
    layer: int
    head: int

    @property
    def label(self) -> str:
        return f"{self.kind} L{self.layer + 1} H{self.head + 1}"


def n_layers(model: Transformer) -> dict[HeadKind, int]:
    c = model.config
    return {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers}


def all_heads(model: Transformer) -> list[Head]:
    """Every head of the model, encoder first, in layer and head order."""
    layers = n_layers(model)
    return [Head(k, layer, h) for k in HEAD_KINDS for layer in range(layers[k]) for h in range(model.config.n_heads)]


def switched_off(model: Transformer, heads: list[Head]) -> Intervention:
    """Gates of 1 everywhere but 0 at ``heads``."""
    device = next(model.parameters()).device
    gates = {k: torch.ones(n, model.config.n_heads, device=device) for k, n in n_layers(model).items()}  # (L, H)
    for h in heads:
        gates[h.kind][h.layer, h.head] = 0.0
    return Intervention(gates["encoder"], gates["decoder"], gates["cross"])


@dataclass(frozen=True)
class Ablation:
    """The output with ``heads`` off, and what the original output's log-probability became."""

    heads: list[Head]
    tokens: list[int]  # the re-decoded output, EOS last
    truncated: bool
    original_log_prob: float  # log p(original output | source), all heads on
    ablated_log_prob: float  # the same output, teacher-forced with ``heads`` off
    new_log_prob: float  # log p(re-decoded output | source) with ``heads`` off


def ablate(
    model: Transformer,
    src_ids: list[int],
    original: list[int],
    heads: list[Head],
    options: DecodeOptions = GREEDY,
) -> Ablation:
    """Re-decode with ``heads`` off (the page's search) and re-score the original output."""
    off = switched_off(model, heads)
    tokens, truncated = search(Steered(model, off), src_ids, options)
    scored = ((original, None), (original, off), (tokens, off))  # all heads on; the original, the new output off
    log_probs = [float(output_log_probs(model, src_ids, out, gates).sum()) for out, gates in scored]
    return Ablation(sorted(heads), tokens, truncated, *log_probs)


def head_effects(model: Transformer, src_ids: list[int], original: list[int]) -> tuple[list[Head], np.ndarray]:
    """Every head (up to MAX_SCANNED) and the change in log p(original output) when it alone is off: (n_heads,)."""
    heads = all_heads(model)[:MAX_SCANNED]
    base = float(output_log_probs(model, src_ids, original).sum())
    deltas = [float(output_log_probs(model, src_ids, original, switched_off(model, [h])).sum()) - base for h in heads]
    return heads, np.array(deltas, dtype=np.float64)
