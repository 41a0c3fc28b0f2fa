"""Look a translation up in a neighbour index: the training pairs nearest to its sentence (encoder) and to one of
its output tokens (decoder), by cosine similarity: one float16 matrix-vector product over the index."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from data.tokenizer import Tokenizer
from lab.neighbours.hidden_states import query_states
from lab.neighbours.state_index import NeighbourIndex
from model.transformer import Transformer

K = 8  # neighbours shown


@dataclass(frozen=True)
class Neighbour:
    pair: int  # row of the index
    similarity: float  # cosine, -1..1
    position: int | None  # the decoder state's target position; None for a sentence neighbour


def nearest(matrix: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``matrix`` (unit rows, float16) most cosine-similar to ``query``: (rows, similarities),
    best first. torch's float16 matrix-vector product (float32 sums) reads the index in place, without a float32
    copy: 0.1 s for 470,000 rows of 256 on one thread here, where numpy's float16->float32 blocks took 0.35 s."""
    q = torch.from_numpy((query / max(float(np.linalg.norm(query)), 1e-6)).astype(np.float16))
    sims = (torch.from_numpy(matrix) @ q).float()
    top = torch.topk(sims, min(k, len(sims)))
    return top.indices.numpy(), top.values.numpy()


def sentence_neighbours(index: NeighbourIndex, vector: np.ndarray, k: int = K) -> list[Neighbour]:
    """The ``k`` pairs whose encoder vector is nearest to ``vector``."""
    rows, sims = nearest(index.encoder, vector, k)
    return [Neighbour(int(r), float(s), None) for r, s in zip(rows, sims, strict=True)]


def token_neighbours(index: NeighbourIndex, state: np.ndarray, k: int = K) -> list[Neighbour]:
    """The ``k`` pairs with a decoder state nearest to ``state``, each at its nearest position (a pair once)."""
    rows, sims = nearest(index.decoder, state, k * int(index.info.positions))  # enough for k distinct pairs
    found: dict[int, Neighbour] = {}
    for r, s in zip(rows, sims, strict=True):
        pair = int(index.decoder_pair[r])
        if pair not in found:
            found[pair] = Neighbour(pair, float(s), int(index.decoder_position[r]))
    return list(found.values())[:k]


def neighbours_of(
    index: NeighbourIndex, model: Transformer, src_ids: list[int], tokens: list[int], position: int, k: int = K
) -> tuple[list[Neighbour], list[Neighbour]]:
    """A translation's sentence neighbours and its output token ``position``'s, from one teacher-forced pass."""
    vector, states = query_states(model, src_ids, tokens)
    return sentence_neighbours(index, vector, k), token_neighbours(index, states[position], k)


def marked(tokenizer: Tokenizer, text: str, position: int, mark: tuple[str, str] = ("⟦", "⟧")) -> str:
    """``text`` with its target token ``position`` (as the model reads it) between ``mark``s."""
    ids = tokenizer.encode_tgt(text)
    pieces = [p.replace("▁", " ") for p in tokenizer.tgt_pieces(ids[:-1])] + [""]  # EOS: shown as nothing
    if not 0 <= position < len(pieces):
        return text
    piece = pieces[position] or "</s>"
    word = piece.lstrip(" ")
    pieces[position] = f"{piece[: len(piece) - len(word)]}{mark[0]}{word}{mark[1]}"
    return "".join(pieces).strip()
