"""Look a translation up in a sentence index: its ``CANDIDATES`` nearest pairs by the compact index, then their
states recomputed exactly (one teacher-forced pass of the candidates): the training pairs nearest to its sentence
(encoder) and to one of its output tokens (decoder), by cosine similarity.

A target position's decoder state is the last decoder layer's output (final norm applied, what the output layer turns
into the next token's logits), teacher-forced on the pair's own English: row t predicts target token t.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from data.batch import Example, batch_indices, collate, encode_pairs
from data.readers import Pair
from data.tokenizer import Tokenizer
from lab.neighbours.sentence_index import BATCH_TOKENS, SentenceIndex, sentence_vectors, unit, unit_vector
from model.transformer import Transformer
from translate.translator import Translator

K = 8  # neighbours shown
CANDIDATES = 128  # pairs nearest by the compact index whose states are recomputed: token neighbours are among them


@dataclass(frozen=True)
class Neighbour:
    pair: int  # row of the index
    similarity: float  # cosine, -1..1
    position: int | None  # the decoder state's target position; None for a sentence neighbour


@dataclass(frozen=True)
class Candidates:
    """The compact index's best pairs for one sentence, with their exact states."""

    pairs: np.ndarray  # (C,) rows of the index, nearest first by the compact index
    vectors: np.ndarray  # (C, D) unit encoder vectors
    states: list[np.ndarray]  # C arrays (T, D) of unit decoder states, teacher-forced on the pair's own English


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


def candidates(index: SentenceIndex, translator: Translator, vector: np.ndarray, n: int = CANDIDATES) -> Candidates:
    """The ``n`` pairs nearest to ``vector`` by the compact index, their states recomputed in batches."""
    rows = np.argsort(-index.similarities(vector), kind="stable")[:n]
    pairs = [Pair(index.sources[r], index.targets[r]) for r in rows]
    examples = encode_pairs(pairs, translator.tokenizer, translator.model.config.max_positions)
    vectors, states = np.zeros((len(rows), len(vector)), np.float32), [np.empty(0)] * len(rows)
    for batch in batch_indices(examples, BATCH_TOKENS, seed=0, epoch=0, shuffle=False):
        vectors[batch], forced = forced_states(translator.model, [examples[i] for i in batch])
        for i, s in zip(batch, forced, strict=True):
            states[i] = s
    return Candidates(rows, vectors, states)


def sentence_neighbours(found: Candidates, vector: np.ndarray, k: int = K) -> list[Neighbour]:
    """The ``k`` candidates whose exact encoder vector is nearest to ``vector``."""
    sims = found.vectors @ unit_vector(vector)
    return [Neighbour(int(found.pairs[r]), float(sims[r]), None) for r in np.argsort(-sims, kind="stable")[:k]]


def token_neighbours(found: Candidates, state: np.ndarray, k: int = K) -> list[Neighbour]:
    """The ``k`` candidates with a decoder state nearest to ``state``, each at its nearest position (a pair once)."""
    sims = [states @ unit_vector(state) for states in found.states]  # per candidate: (T,)
    order = sorted(range(len(sims)), key=lambda i: -sims[i].max())[:k]
    return [Neighbour(int(found.pairs[i]), float(sims[i].max()), int(sims[i].argmax())) for i in order]


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


def table(index: SentenceIndex, found: list[Neighbour], tokenizer: Tokenizer, src: str, tgt: str) -> pd.DataFrame:
    """One row per neighbour: its similarity, its ``src`` and its ``tgt`` text (the decoder state's token marked)."""
    return pd.DataFrame(
        {
            "similarity": [round(n.similarity, 3) for n in found],
            src: [index.sources[n.pair] for n in found],
            tgt: [
                index.targets[n.pair] if n.position is None else marked(tokenizer, index.targets[n.pair], n.position)
                for n in found
            ],
        }
    )
