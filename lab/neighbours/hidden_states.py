"""The states a neighbour index compares, from the model's own forward pass (``Transformer.encode``/``decode``):

- a sentence's encoder vector: the encoder output (``memory``, final norm applied) averaged over the source's real
  tokens (not padding, not EOS: EOS is the same token in every sentence);
- a target position's decoder state: the last decoder layer's output (final norm applied, what the output layer
  turns into the next token's logits), teacher-forced on the pair's own English: row t predicts target token t.

Both are compared by cosine similarity, so they are stored as unit vectors.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from data.batch import Example, collate
from model.transformer import Transformer

POSITIONS = 4  # decoder states kept per training pair (evenly spread over its English): the memory bound


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
def forced_states(model: Transformer, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
    """One teacher-forced pass: (B, D) unit encoder vectors and (B, T, D) unit decoder states."""
    c = model.config
    memory, src_mask, _ = model.encode(src)
    hidden = model.decode(tgt_in, memory, src_mask).hidden  # (B, T, D)
    return unit(sentence_vectors(memory, src, c.pad_id, c.eos_id)), unit(hidden)


def kept_positions(length: int, n: int = POSITIONS) -> list[int]:
    """Up to ``n`` target positions evenly spread over an English of ``length`` ids (EOS last, left out unless it
    is the only one): the first and the last word piece always among them."""
    words = max(length - 1, 1)
    if words <= n:
        return list(range(words))
    return sorted({round(i * (words - 1) / (n - 1)) for i in range(n)})


def query_states(model: Transformer, src_ids: list[int], tokens: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """A translation's (D,) encoder vector and (T, D) decoder states, teacher-forced on its own ``tokens``."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)
    tgt_in = torch.tensor([[model.config.bos_id, *tokens[:-1]]], device=device)
    encoder, decoder = forced_states(model, src, tgt_in)
    return encoder[0].float().cpu().numpy(), decoder[0].float().cpu().numpy()


def batch_states(model: Transformer, examples: list[Example]) -> tuple[np.ndarray, np.ndarray]:
    """The examples' (B, D) encoder vectors and their decoder states at ``kept_positions``, all in one
    (sum of kept positions, D) array in the examples' order."""
    c = model.config
    batch = collate(examples, c.pad_id, c.bos_id)
    device = next(model.parameters()).device
    encoder, decoder = forced_states(model, batch.src.to(device), batch.tgt_in.to(device))
    rows = torch.tensor([row for row, e in enumerate(examples) for _ in kept_positions(len(e.tgt))])
    columns = torch.tensor([p for e in examples for p in kept_positions(len(e.tgt))])
    return encoder.cpu().numpy(), decoder[rows, columns].cpu().numpy()
