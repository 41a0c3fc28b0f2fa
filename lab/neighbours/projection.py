"""The training set as a map (after LIT's embedding projector): the sentence index's pairs on the two directions along
which their encoder vectors vary most (a PCA of the index's vectors, centred), and any sentence placed by the same
projection, so that a training pair's own sentence lands on its own point.

The map is a shadow: two directions keep only ``explained`` of the variance, so two points near on the map may be far
apart in the model's ``d_model`` dimensions (the neighbour tables measure that distance; the map does not). At most
``MAX_POINTS`` pairs are drawn, a sample drawn with ``SEED``; the axes are fitted on every indexed pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.neighbours.sentence_index import SentenceIndex

MAX_POINTS = 4_000  # pairs drawn (with the marks, under Altair's 5,000 rows a chart)
SEED = 0  # the sample's


@dataclass(frozen=True)
class Projection:
    mean: np.ndarray  # (P,) the indexed vectors' mean, in the index's projected coordinates
    axes: np.ndarray  # (P, 2) the two main directions of the centred vectors
    explained: float  # the share of the variance the two keep, 0..1
    rows: np.ndarray  # (n,) the index rows drawn, ascending
    points: np.ndarray  # (n, 2) where they lie

    def place(self, index: SentenceIndex, vector: np.ndarray) -> np.ndarray:
        """(2,): a sentence's encoder vector (``query_states``) on the map, as its pair would be if indexed."""
        unit = vector / max(float(np.linalg.norm(vector)), 1e-6)
        return (unit @ index.basis - self.mean) @ self.axes

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
