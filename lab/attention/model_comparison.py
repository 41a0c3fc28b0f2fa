"""Two models on one sentence: model B reads model A's source and translation (one forced pass), so the two sets of
maps line up cell by cell and B − A says where B attends differently (LIT's side-by-side mode, for attention).
A pair of models that do not read the same tokens with the same layers and heads is said, not drawn."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from lab.attention.map_views import MapView, map_view
from lab.attention.sentence_maps import KINDS, Kind, SentenceMaps
from lab.attention.translate_with_maps import maps_of
from translate.translator import Translator


def why_not_comparable(a: Translator, b: Translator) -> str:
    """Why B's maps cannot be laid over A's ("" when they can): another vocabulary, or other layers or heads."""
    if a.tokenizer.proto() != b.tokenizer.proto():
        return (
            "the two models split text with different vocabularies, so their rows and columns are not the same tokens"
        )
    shape = [(m.config.n_encoder_layers, m.config.n_decoder_layers, m.config.n_heads) for m in (a.model, b.model)]
    if shape[0] != shape[1]:
        (ea, da, ha), (eb, db, hb) = shape
        return (
            f"A has {ea} + {da} layers of {ha} heads and B {eb} + {db} of {hb}: a layer or head of one is not one of "
            "the other"
        )
    return ""


@dataclass(frozen=True)
class Comparison:
    """A's maps of its translation, and B's maps of the same tokens (None, with ``why_not``, when they differ)."""

    a: SentenceMaps
    b: SentenceMaps | None
    why_not: str = ""

    def views(self, kind: Kind, words: bool) -> tuple[MapView, MapView, MapView]:
        """(A, B, B − A) of one kind, all layers and heads, at subword or word level."""
        if self.b is None:
            raise ValueError(f"no difference: {self.why_not}")
        va, vb = map_view(self.a, kind, words), map_view(self.b, kind, words)
        return va, vb, replace(va, weights=vb.weights - va.weights)

    def layer_changes(self) -> dict[Kind, list[float]]:
        """Per kind, per layer: the mean over heads and rows of the total variation distance ½ Σ |B − A| between
        two rows: 0, the same weights; 1, no key in common."""
        if self.b is None:
            return {}
        return {
            kind: (0.5 * np.abs(self.b.weights(kind) - self.a.weights(kind)).sum(axis=-1)).mean(axis=(1, 2)).tolist()
            for kind in KINDS
        }


def compare(a: Translator, b: Translator, a_maps: SentenceMaps, src_ids: list[int], tokens: list[int]) -> Comparison:
    """B on A's source ids and output tokens, beside A's own maps of them (``a_maps``: ``maps_of(a, …)``)."""
    why = why_not_comparable(a, b)
    return Comparison(a_maps, None if why else maps_of(b, src_ids, tokens), why)
