"""Look a translation up in a sentence index: its ``CANDIDATES`` nearest pairs by the compact index, then their
states recomputed exactly (one teacher-forced pass of the candidates): the training pairs nearest to its sentence
(encoder) and to one of its output tokens (decoder), by cosine similarity.

A target position's decoder state is the last decoder layer's output (final norm applied, what the output layer turns
into the next token's logits), teacher-forced on the pair's own English: row t predicts target token t.

The training set as a map (after LIT's embedding projector): the index's pairs on the two directions along which
their encoder vectors vary most (a PCA over every indexed pair; at most ``MAX_POINTS`` drawn), a sentence placed by the
same projection. The map is a shadow: two directions keep only ``explained`` of the variance, so two points near on
the map may be far apart in the model's ``d_model`` dimensions (the neighbour tables measure that distance).
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
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
MAX_POINTS = 4_000  # pairs drawn on the map (with the marks, under Altair's 5,000 rows a chart)
SEED = 0  # the map's sample
HEIGHT = 420
POINT, NEAREST, SENTENCE = "training pair", "nearest pair", "your sentence"
COLUMNS = ["x", "y", "words", "source", "target", "kind"]


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
    """One forced pass: the examples' (B, D) unit encoder vectors and each one's (T, D) unit decoder states."""
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


@dataclass(frozen=True)
class Projection:
    mean: np.ndarray  # (P,) the indexed vectors' mean, in the index's projected coordinates
    axes: np.ndarray  # (P, 2) the two main directions of the centred vectors
    explained: float  # the share of the variance the two keep, 0..1
    rows: np.ndarray  # (n,) the index rows drawn, ascending
    points: np.ndarray  # (n, 2) where they lie

    def place(self, index: SentenceIndex, vector: np.ndarray) -> np.ndarray:
        """(2,): a sentence's encoder vector (``query_states``) on the map, as its pair would be if indexed."""
        return (unit_vector(vector) @ index.basis - self.mean) @ self.axes

    def of_rows(self, index: SentenceIndex, rows: np.ndarray) -> np.ndarray:
        """(k, 2): indexed pairs on the map, drawn or not."""
        return (decoded(index, np.asarray(rows)) - self.mean) @ self.axes


def decoded(index: SentenceIndex, rows: np.ndarray | None = None) -> np.ndarray:
    """(k, P) float32: the index's int8 codes back in its projected coordinates (all rows when ``rows`` is None)."""
    codes = index.codes if rows is None else index.codes[rows]
    return codes.astype(np.float32) * index.scale


def project(index: SentenceIndex, max_points: int = MAX_POINTS, seed: int = SEED) -> Projection:
    """The map of ``index``: the PCA of all its vectors, and a sample of at most ``max_points`` of them on it."""
    vectors = decoded(index)
    mean = vectors.mean(axis=0)
    centred = vectors - mean
    values, vecs = np.linalg.eigh(centred.T @ centred)  # ascending
    axes = np.ascontiguousarray(vecs[:, ::-1][:, :2])
    axes *= np.where(axes.sum(axis=0) < 0, -1, 1)  # a sign of its own: the same map on every run
    explained = float(values[::-1][:2].sum() / max(float(values.sum()), 1e-12))
    n = len(vectors)
    rows = (
        np.arange(n) if n <= max_points else np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))
    )
    return Projection(mean, axes, explained, rows, centred[rows] @ axes)


def map_frame(points: np.ndarray, sources: list[str], targets: list[str], kind: str = POINT) -> pd.DataFrame:
    """Rows of the map: (n, 2) ``points`` with their pair's texts and length in source words."""
    return pd.DataFrame(
        {
            "x": points[:, 0].round(4),
            "y": points[:, 1].round(4),
            "words": [len(s.split()) for s in sources],
            "source": sources,
            "target": targets,
            "kind": kind,
        },
        columns=COLUMNS,
    )


def map_of(
    fit: Projection, index: SentenceIndex, nearest: list[Neighbour], vector: np.ndarray, source: str
) -> pd.DataFrame:
    """The map's rows: the pairs drawn, the ``nearest`` pairs, and the sentence (its encoder ``vector``) placed."""
    rows = [n.pair for n in nearest]
    pick = [index.sources[r] for r in rows], [index.targets[r] for r in rows]
    return pd.concat(
        [
            map_frame(fit.points, [index.sources[r] for r in fit.rows], [index.targets[r] for r in fit.rows]),
            map_frame(fit.of_rows(index, np.array(rows, int)), *pick, kind=NEAREST),
            map_frame(fit.place(index, vector)[None], [source], ["(this translation)"], kind=SENTENCE),
        ],
        ignore_index=True,
    )


def training_map(frame: pd.DataFrame, title: str, src_title: str, tgt_title: str) -> alt.LayerChart:
    """Training pairs as dots coloured by source length, ``NEAREST`` ringed, ``SENTENCE`` a cross; texts on hover."""
    tooltip = [alt.Tooltip("source:N", title=src_title), alt.Tooltip("target:N", title=tgt_title), "words:Q"]
    axis = {"x": alt.X("x:Q", title="main direction 1"), "y": alt.Y("y:Q", title="main direction 2")}
    base = alt.Chart(frame, title=title).encode(**axis, tooltip=tooltip)
    dots = (
        base.transform_filter(alt.datum.kind == POINT)
        .mark_circle(size=9, opacity=0.5)
        .encode(color=alt.Color("words:Q", title="source words", scale=alt.Scale(scheme="viridis", type="log")))
    )
    rings = base.transform_filter(alt.datum.kind == NEAREST).mark_point(size=90, color="#d62728", strokeWidth=2)
    cross = base.transform_filter(alt.datum.kind == SENTENCE).mark_point(
        shape="cross", size=260, color="black", filled=True
    )
    return (dots + rings + cross).properties(height=HEIGHT, autosize=alt.AutoSizeParams(type="fit-x"))
