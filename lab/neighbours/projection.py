"""The training set as a map (after LIT's embedding projector): the sentence index's pairs on the two directions along
which their encoder vectors vary most (a PCA of the index's vectors, centred), and any sentence placed by the same
projection, so that a training pair's own sentence lands on its own point; and the map's chart (``training_map``,
pure: a DataFrame in, an Altair chart out).

The map is a shadow: two directions keep only ``explained`` of the variance, so two points near on the map may be far
apart in the model's ``d_model`` dimensions (the neighbour tables measure that distance; the map does not). At most
``MAX_POINTS`` pairs are drawn, a sample drawn with ``SEED``; the axes are fitted on every indexed pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from lab.neighbours.lookup import Neighbour
from lab.neighbours.sentence_index import SentenceIndex, unit_vector

MAX_POINTS = 4_000  # pairs drawn (with the marks, under Altair's 5,000 rows a chart)
SEED = 0  # the sample's
HEIGHT = 420
POINT, NEAREST, SENTENCE = "training pair", "nearest pair", "your sentence"
COLUMNS = ["x", "y", "words", "source", "target", "kind"]


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


# --- the map drawn ---


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
    """Training pairs as dots coloured by their source's length in words; ``NEAREST`` rows ringed, the ``SENTENCE``
    row a large cross; each with its pair (or sentence) on hover."""
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
