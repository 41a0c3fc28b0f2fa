"""What a pass changes in the network, heads switched off, token embeddings given directly, and what it returns.

An ``Intervention`` is an argument of ``Transformer.encode``, ``decode`` and ``decode_step``, never stored on a module,
so one shared model serves every session; None (the default) is the plain network.

Switching head h off multiplies its context vectors (B, H, T, D) by 0 before the output projection W_O: the same as
zeroing W_O's columns h·D … (h+1)·D (tested). Giving the token vectors directly (the √d_model-scaled embeddings,
before positions are added) lets attribution take gradients with respect to them. Each layer receives its share,
a ``LayerIntervention``: its gates and which attention weights to return.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass(frozen=True)
class Intervention:
    """Head gates per kind and layer, and token vectors that replace the embedding look-up."""

    encoder_heads: Tensor | None = None  # (L_enc, H) multipliers on each head's output: 1 keeps it, 0 switches it off
    decoder_heads: Tensor | None = None  # (L_dec, H) the same for decoder masked self-attention
    cross_heads: Tensor | None = None  # (L_dec, H) the same for cross-attention
    src_vectors: Tensor | None = None  # (B, S, d_model) scaled source token embeddings, used instead of looking up src
    tgt_vectors: Tensor | None = None  # (B, T, d_model) the same for the decoder input positions passed

    def encoder_layer(self, layer: int, need_weights: bool = False) -> LayerIntervention:
        """What encoder layer ``layer`` is asked: its gates, and whether to return its weights."""
        return LayerIntervention(_row(self.encoder_heads, layer), None, need_weights, False)

    def decoder_layer(self, layer: int, need_weights: bool = False, need_cross: bool = False) -> LayerIntervention:
        """What decoder layer ``layer`` is asked: its gates, and which weights to return (``need_cross``: the cross
        weights alone, for guided alignment, self-attention keeping the fused kernel)."""
        gates = _row(self.decoder_heads, layer), _row(self.cross_heads, layer)
        return LayerIntervention(*gates, need_weights, need_weights or need_cross)


@dataclass(frozen=True)
class LayerIntervention:
    """One layer's share of a pass: the gates on its heads and which attention weights it returns."""

    self_gate: Tensor | None = None  # (H,) on self-attention (encoder, or decoder masked), None: all heads on
    cross_gate: Tensor | None = None  # (H,) on cross-attention (decoder layers)
    self_weights: bool = False  # return the self-attention weights
    cross_weights: bool = False  # return the cross-attention weights


PLAIN_LAYER = LayerIntervention()  # the plain network, nothing returned


def _row(heads: Tensor | None, layer: int) -> Tensor | None:
    return None if heads is None else heads[layer]
