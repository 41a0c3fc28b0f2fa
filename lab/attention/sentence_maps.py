"""One sentence's attention maps with token labels, as the page reads them, plus the checks they must pass.

``SentenceMaps`` wraps the model's own record (``AttentionMaps``) and adds subword labels and which tokens are special
or padding; the weights are read as numpy arrays sharing the record's memory, never copied."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.attention_maps import KINDS, AttentionMaps, Kind  # the views read them here, beside KIND_TITLES

KIND_TITLES: dict[Kind, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Cross-attention",
}
SUM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class SentenceMaps:
    """Every layer and head of the three kinds of attention for one (source, output) pair. Row i of ``decoder`` and
    ``cross`` is computed at decoder input ``tgt_in[i]`` and predicts ``tgt_out[i]`` (docs/attention-pitfalls.md §1)."""

    maps: AttentionMaps  # the model's record of the forced pass (CPU tensors and ids)
    src: list[str]  # subword pieces x1 … xS </s>
    tgt_in: list[str]  # <s> y1 … y(T-1)
    tgt_out: list[str]  # y1 … y(T-1) </s>
    src_special: list[bool]  # True at EOS / padding: a word of its own, never an alignment target
    tgt_in_special: list[bool]  # True at BOS / padding
    tgt_out_special: list[bool]  # True at EOS / padding
    src_pad: list[bool]  # True at padding (must receive exactly 0 weight)
    tgt_in_pad: list[bool]

    @property
    def encoder(self) -> np.ndarray:  # (L_enc, H, S, S): rows and columns = src
        return self.maps.encoder.numpy()

    @property
    def decoder(self) -> np.ndarray:  # (L_dec, H, T, T): rows predict tgt_out, columns = tgt_in
        return self.maps.decoder.numpy()

    @property
    def cross(self) -> np.ndarray:  # (L_dec, H, T, S): rows predict tgt_out, columns = src
        return self.maps.cross.numpy()

    @property
    def n_heads(self) -> int:
        return int(self.encoder.shape[1])

    def weights(self, kind: Kind) -> np.ndarray:
        """(L, H, rows, cols) of one kind."""
        return getattr(self.maps, kind).numpy()

    def n_layers(self, kind: Kind) -> int:
        return int(self.weights(kind).shape[0])

    def labels(self, kind: Kind) -> tuple[list[str], list[str]]:
        """(row tokens, column tokens) of one kind."""
        if kind == "encoder":
            return self.src, self.src
        return self.tgt_out, (self.tgt_in if kind == "decoder" else self.src)

    def future(self, kind: Kind) -> np.ndarray:
        """(rows, cols) True where the mask forbids attending: the future in masked self-attention."""
        rows, cols = (len(x) for x in self.labels(kind))
        if kind != "decoder":
            return np.zeros((rows, cols), dtype=bool)
        return np.triu(np.ones((rows, cols), dtype=bool), k=1)


def pick(weights: np.ndarray, layer: int, head: int | None) -> np.ndarray:
    """(L, H, rows, cols) -> (rows, cols) of one layer: one head, or the mean of heads when ``head`` is None."""
    per_layer = weights[layer]  # (H, rows, cols)
    return per_layer.mean(axis=0) if head is None else per_layer[head]


def problems(maps: SentenceMaps) -> list[str]:
    """Broken invariants, checked on the full uncropped maps (docs/attention-pitfalls.md §5); empty when all is well."""
    found = []
    for kind in KINDS:
        w = maps.weights(kind)
        sums = w.sum(axis=-1)
        if w.size and not np.allclose(sums, 1.0, atol=SUM_TOLERANCE):
            found.append(
                f"{KIND_TITLES[kind]}: rows do not sum to 1 (worst {sums.flat[np.abs(sums - 1).argmax()]:.4f})"
            )
    future = maps.future("decoder")
    if np.any(maps.decoder[..., future] != 0.0):
        found.append("Decoder masked self-attention: weight on future positions (must be exactly 0)")
    pad_columns = {"encoder": maps.src_pad, "cross": maps.src_pad, "decoder": maps.tgt_in_pad}
    for kind, flags in pad_columns.items():
        columns = np.array(flags, dtype=bool)
        if columns.any() and np.any(maps.weights(kind)[..., columns] != 0.0):
            found.append(f"{KIND_TITLES[kind]}: weight on padding")
    return found
