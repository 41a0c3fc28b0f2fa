"""Step-by-step decoding: what the decoder had generated at step t, and where it looked to predict the next token."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.maps import SentenceMaps, pick


@dataclass(frozen=True)
class Step:
    """Step ``step`` (0-based): input so far ``generated`` (BOS first), output ``predicted``, and its two rows."""

    step: int
    generated: list[str]  # tgt_in[: step + 1]
    predicted: str  # tgt_out[step]
    self_row: np.ndarray  # (step + 1,) masked self-attention over ``generated`` (the future is not shown: it is 0)
    cross_row: np.ndarray  # (S,) cross-attention over the source


def n_steps(maps: SentenceMaps) -> int:
    return len(maps.tgt_out)


def step_at(maps: SentenceMaps, step: int, layer: int, head: int | None) -> Step:
    """Row ``step`` of the chosen decoder layer (one head or the mean) for both decoder attentions."""
    if not 0 <= step < n_steps(maps):
        raise IndexError(f"step {step} outside 0..{n_steps(maps) - 1}")
    decoder = pick(maps.decoder, layer, head)  # (T, T)
    cross = pick(maps.cross, layer, head)  # (T, S)
    return Step(step, maps.tgt_in[: step + 1], maps.tgt_out[step], decoder[step, : step + 1], cross[step])
