"""What a "what if?" pass changes in the network: heads switched off, token embeddings given directly.

An ``Intervention`` is an argument of ``Transformer.encode``, ``decode`` and ``decode_step``, never stored on a module,
so one shared model serves every session; None (the default) is the plain network.

Switching head h off multiplies its context vectors (B, H, T, D) by 0 before the output projection W_O: the same as
zeroing W_O's columns h·D … (h+1)·D (tested). Giving the token vectors directly (the √d_model-scaled embeddings,
before positions are added) lets attribution take gradients with respect to them.
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

    def encoder_gate(self, layer: int) -> Tensor | None:
        """(H,) gate of encoder layer ``layer``, or None."""
        return None if self.encoder_heads is None else self.encoder_heads[layer]

    def decoder_gates(self, layer: int) -> tuple[Tensor | None, Tensor | None]:
        """(self, cross) (H,) gates of decoder layer ``layer``, each None when not set."""
        own = None if self.decoder_heads is None else self.decoder_heads[layer]
        cross = None if self.cross_heads is None else self.cross_heads[layer]
        return own, cross
