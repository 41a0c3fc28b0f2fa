"""The encoder–decoder Transformer: embeddings + positions, N encoder layers, N decoder layers, output projection."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from model.attention import causal_mask, padding_mask
from model.config import ModelConfig
from model.intervention import Intervention
from model.layers import DecoderLayer, EncoderLayer, KVCache, PositionalEncoding


class Encoded(NamedTuple):
    memory: Tensor  # (B, S, d_model)
    src_mask: Tensor  # (B, 1, 1, S), True at real source tokens
    weights: tuple[Tensor, ...] | None  # per layer (B, H, S, S)


class Decoded(NamedTuple):
    hidden: Tensor  # (B, T, d_model), final-norm applied
    self_weights: tuple[Tensor, ...] | None  # per layer (B, H, T, past + T)
    cross_weights: tuple[Tensor | None, ...] | None  # per layer (B, H, T, S); see decode's cross_weights_layer


class Step(NamedTuple):
    logits: Tensor  # (B, V) for the newest position
    caches: tuple[KVCache, ...]  # the same objects as passed in, extended by one position
    self_weights: tuple[Tensor, ...] | None  # per layer (B, H, 1, t+1)
    cross_weights: tuple[Tensor, ...] | None  # per layer (B, H, 1, S)


class Transformer(nn.Module):
    """Vaswani et al. (2017) with configurable pre/post norm, positions and embedding sharing."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = (
            self.src_embed if c.share_embeddings else nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        )
        self.src_pos = PositionalEncoding(c.max_positions, c.d_model, c.positional)
        self.tgt_pos = PositionalEncoding(c.max_positions, c.d_model, c.positional)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.n_decoder_layers))
        # Pre-norm stacks need a final LayerNorm; post-norm layers already end with one.
        self.encoder_norm = nn.LayerNorm(c.d_model) if c.norm == "pre" else nn.Identity()
        self.decoder_norm = nn.LayerNorm(c.d_model) if c.norm == "pre" else nn.Identity()
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        self.reset_parameters()
        if c.tie_output:
            self.output.weight = self.tgt_embed.weight

    def reset_parameters(self) -> None:
        """Xavier for matrices, N(0, d_model^-½) for embeddings (scaled by √d_model on input)."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name and "pos" not in name:
                # W_Q, W_K, W_V (stacked in in_proj) are each a d_model × d_model matrix of their own.
                blocks = p.split(self.config.d_model) if name.endswith("in_proj.weight") else (p,)
                for block in blocks:
                    nn.init.xavier_uniform_(block)
        for embed in {self.src_embed, self.tgt_embed}:
            nn.init.normal_(embed.weight, std=self.config.d_model**-0.5)
            with torch.no_grad():
                embed.weight[self.config.pad_id].zero_()

    def embed(
        self,
        ids: Tensor,
        table: nn.Embedding,
        positions: PositionalEncoding,
        offset: int = 0,
        vectors: Tensor | None = None,
    ) -> Tensor:
        """(B, T) ids -> (B, T, d_model): √d_model-scaled embedding plus position; ``vectors`` (B, T, d_model), when
        given, replace the scaled embeddings (attribution: model/intervention.py)."""
        tokens = table(ids) * math.sqrt(self.config.d_model) if vectors is None else vectors
        return self.embed_dropout(positions(tokens, offset))

    def encode(self, src: Tensor, need_weights: bool = False, intervention: Intervention | None = None) -> Encoded:
        """src: (B, S) ids, padded with pad_id."""
        what = intervention or Intervention()
        src_mask = padding_mask(src, self.config.pad_id)
        x = self.embed(src, self.src_embed, self.src_pos, vectors=what.src_vectors)
        weights = []
        for i, layer in enumerate(self.encoder_layers):
            x, w = layer(x, src_mask, what.encoder_layer(i, need_weights))
            weights.append(w)
        return Encoded(self.encoder_norm(x), src_mask, tuple(weights) if need_weights else None)

    def start_caches(self, memory: Tensor, capacity: int | None = None) -> tuple[KVCache, ...]:
        """One empty cache per decoder layer for up to ``capacity`` steps (default max_positions)."""
        return tuple(layer.start_cache(memory, capacity or self.config.max_positions) for layer in self.decoder_layers)

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor | None,
        src_mask: Tensor,
        need_weights: bool = False,
        caches: tuple[KVCache, ...] | None = None,
        cross_weights_layer: int | None = None,
        intervention: Intervention | None = None,
    ) -> Decoded:
        """The decoder stack, teacher-forced or step by step: tgt_in (B, T) = BOS y1 … y(T-1); row i predicts y(i+1).

        Without ``caches`` this is the full pass over ``tgt_in``. With them, ``tgt_in`` holds the next positions
        after those already cached (one per step when decoding), whose keys/values are read from the caches and
        extended in place; ``memory`` is then unused (the caches hold its keys/values).
        ``cross_weights_layer`` (an index into the decoder layers, negative from the top) returns that layer's
        cross weights even without ``need_weights``, None at the other layers: guided alignment supervises them
        while every other attention keeps the fused kernel. ``intervention``: heads switched off, token vectors
        given directly (model/intervention.py).
        """
        what = intervention or Intervention()
        past = 0 if caches is None else caches[0].length
        t = tgt_in.size(1)
        if caches is None:
            tgt_mask = causal_mask(t, tgt_in.device) & padding_mask(tgt_in, self.config.pad_id)  # (B, 1, T, T)
        else:  # the cached positions are all visible; only new positions after the first need a mask
            tgt_mask = causal_mask(t, tgt_in.device, past) if t > 1 else None  # (1, 1, T, past + T)
        y = self.embed(tgt_in, self.tgt_embed, self.tgt_pos, offset=past, vectors=what.tgt_vectors)
        n_layers = len(self.decoder_layers)
        wanted = None if cross_weights_layer is None else range(n_layers)[cross_weights_layer]  # IndexError if out
        self_ws, cross_ws = [], []
        for i, layer in enumerate(self.decoder_layers):
            cache = None if caches is None else caches[i]
            y, self_w, cross_w = layer(
                y, memory, src_mask, tgt_mask, cache, what.decoder_layer(i, need_weights, i == wanted)
            )
            self_ws.append(self_w)
            cross_ws.append(cross_w)
        if not need_weights:
            return Decoded(self.decoder_norm(y), None, None if wanted is None else tuple(cross_ws))
        return Decoded(self.decoder_norm(y), tuple(self_ws), tuple(cross_ws))

    def decode_step(
        self,
        last_tokens: Tensor,
        caches: tuple[KVCache, ...],
        src_mask: Tensor,
        need_weights: bool = False,
        intervention: Intervention | None = None,
    ) -> Step:
        """One cached step: last_tokens (B, 1) at position t = cached length; returns next-token logits (B, V)."""
        hidden, self_ws, cross_ws = self.decode(last_tokens, None, src_mask, need_weights, caches, None, intervention)
        return Step(self.output(hidden[:, -1]), caches, self_ws, cross_ws)  # (B, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Logits (B, T, V) at every target position (tests, small batches; training projects real positions only)."""
        memory, src_mask, _ = self.encode(src)
        return self.output(self.decode(tgt_in, memory, src_mask).hidden)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
