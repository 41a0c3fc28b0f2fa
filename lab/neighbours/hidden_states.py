"""The states the neighbours view compares, from the model's own forward pass (``Transformer.encode``/``decode``):

- a sentence's encoder vector: the encoder output (``memory``, final norm applied) averaged over the source's real
  tokens (not padding, not EOS: EOS is the same token in every sentence);
- a target position's decoder state: the last decoder layer's output (final norm applied, what the output layer
  turns into the next token's logits), teacher-forced on the pair's own English: row t predicts target token t.

Both are compared by cosine similarity, so they are returned as unit vectors.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from data.batch import Example, collate
from model.transformer import Transformer


def unit(x: Tensor) -> Tensor:
    """Rows scaled to length 1 (a zero row stays zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)


def sentence_vectors(memory: Tensor, src: Tensor, pad_id: int, eos_id: int) -> Tensor:
    """(B, S, D) memory, (B, S) ids -> (B, D): the mean over real tokens; EOS alone for an empty source."""
    real = (src != pad_id) & (src != eos_id)
    real = real | ((real.sum(dim=1, keepdim=True) == 0) & (src == eos_id))  # an empty source: its EOS
    weights = real.unsqueeze(-1).to(memory.dtype)  # (B, S, 1)
    return (memory * weights).sum(dim=1) / weights.sum(dim=1)


@torch.no_grad()
def encoder_vectors(model: Transformer, examples: list[Example]) -> np.ndarray:
    """The examples' (B, D) unit encoder vectors: the encoder alone, what a sentence index holds."""
    c = model.config
    src = collate(examples, c.pad_id, c.bos_id).src.to(next(model.parameters()).device)
    return unit(sentence_vectors(model.encode(src).memory, src, c.pad_id, c.eos_id)).float().cpu().numpy()


@torch.no_grad()
def forced_states(model: Transformer, examples: list[Example]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One teacher-forced pass: the examples' (B, D) unit encoder vectors and each one's (T, D) unit decoder
    states, one row per target id of its own (EOS's row last, padding left out)."""
    c = model.config
    batch = collate(examples, c.pad_id, c.bos_id)
    device = next(model.parameters()).device
    src = batch.src.to(device)
    memory, src_mask, _ = model.encode(src)
    hidden = unit(model.decode(batch.tgt_in.to(device), memory, src_mask).hidden).float().cpu().numpy()  # (B, T, D)
    vectors = unit(sentence_vectors(memory, src, c.pad_id, c.eos_id)).float().cpu().numpy()
    return vectors, [hidden[row, : len(e.tgt)] for row, e in enumerate(examples)]


def query_states(model: Transformer, src_ids: list[int], tokens: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A translation's (D,) encoder vector and (T, D) decoder states, teacher-forced on its own ``tokens``."""
    vectors, states = forced_states(model, [Example(list(src_ids), list(tokens))])
    return vectors[0], states[0]
