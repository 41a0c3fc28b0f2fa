"""What each head does: attention entropy and a positional pattern label computed from its map."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Positional patterns, each a key position per row: the row's own position, the one before, the first, the last.
PATTERNS = ("self", "previous token", "first token", "last token")  # self-attention: keys are the same sequence
CROSS_PATTERNS = ("same position", "position before", "first source token", "source </s>")  # keys: the source
BROAD = "broad"  # spreads its weight: on average no key gets half of it
CONTENT = "content"  # sharp, but on different positions from row to row: depends on the words
SHARE = 0.5  # a pattern names the head when at least this share of rows follows it
SHARP = 0.5  # a row is sharp when its largest weight reaches this
ABOVE_UNIFORM = 1.5  # a row follows a pattern only if its top weight beats 1.5 × uniform


@dataclass(frozen=True)
class HeadSummary:
    layer: int
    head: int
    entropy: float  # bits, mean over rows (0 = always one key; log2(n) = uniform over n keys)
    label: str  # one of PATTERNS, CROSS_PATTERNS, BROAD, CONTENT
    share: float  # fraction of rows that follow ``label`` (for BROAD/CONTENT: of rows that are broad/sharp)


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """(..., rows, cols) -> (..., rows): -Σ p log2 p, with 0·log 0 = 0 (masked cells add nothing)."""
    p = weights.astype(np.float64)
    logs = np.log2(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=-1)


def pattern(weights: np.ndarray, allowed: np.ndarray, names: tuple[str, ...] = PATTERNS) -> tuple[str, float]:
    """Label one head's (rows, cols) map; ``allowed`` (rows, cols) marks the keys each row may attend to.

    ``names`` words the four positional patterns: PATTERNS for self-attention, CROSS_PATTERNS for cross-attention
    (where key position i is a source token, not the row's own token).
    """
    n_allowed = allowed.sum(axis=1)
    rows = np.flatnonzero(n_allowed >= 2)  # a row with one possible key tells nothing
    if rows.size == 0:
        return BROAD, 0.0
    best = np.where(allowed, weights, -np.inf).argmax(axis=1)[rows]
    top = weights[rows, best]
    clear = top > ABOVE_UNIFORM / n_allowed[rows]  # a flat row's argmax is an accident, not a pattern
    last = np.array([np.flatnonzero(allowed[r]).max() for r in rows])
    targets = dict(zip(names, (rows, rows - 1, np.zeros_like(rows), last), strict=True))
    shares = {name: float(np.mean((best == target) & clear)) for name, target in targets.items()}
    name = max(names, key=lambda p: shares[p])  # ties go to the earlier pattern (self before last)
    if shares[name] >= SHARE:
        return name, shares[name]
    sharp = float(np.mean(top >= SHARP))
    return (CONTENT, sharp) if sharp >= SHARE else (BROAD, 1.0 - sharp)


def summarize(weights: np.ndarray, future: np.ndarray, cross: bool = False) -> list[HeadSummary]:
    """One summary per (layer, head) of (L, H, rows, cols) maps; ``future`` (rows, cols) marks masked keys.

    ``cross``: the keys are another sentence (cross-attention), and the patterns are worded for it.
    """
    names = CROSS_PATTERNS if cross else PATTERNS
    allowed = ~future
    entropy = row_entropy(weights).mean(axis=-1) if weights.shape[-2] else np.zeros(weights.shape[:2])  # (L, H)
    out = []
    for layer in range(weights.shape[0]):
        for head in range(weights.shape[1]):
            label, share = pattern(weights[layer, head], allowed, names)
            out.append(HeadSummary(layer, head, float(entropy[layer, head]), label, share))
    return out
