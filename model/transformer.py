"""The encoder–decoder Transformer: embeddings + positions, N encoder layers, N decoder layers, output projection."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from model.attention import causal_mask, padding_mask
from model.config import ModelConfig
from model.layers import DecoderLayer, EncoderLayer, LayerCache, PositionalEncoding


class Encoded(NamedTuple):
    memory: Tensor  # (B, S, d_model)
    src_mask: Tensor  # (B, 1, 1, S), True at real source tokens
    weights: tuple[Tensor, ...] | None  # per layer (B, H, S, S)


class Decoded(NamedTuple):
    hidden: Tensor  # (B, T, d_model), final-norm applied
    self_weights: tuple[Tensor, ...] | None  # per layer (B, H, T, T)
    cross_weights: tuple[Tensor, ...] | None  # per layer (B, H, T, S)


class Step(NamedTuple):
    logits: Tensor  # (B, V) for the newest position
    caches: tuple[LayerCache, ...]
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
        layer_args = (c.d_model, c.n_heads, c.d_ff, c.dropout, c.attention_dropout, c.norm)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(c.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(c.n_decoder_layers))
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
                nn.init.xavier_uniform_(p)
        for embed in {self.src_embed, self.tgt_embed}:
            nn.init.normal_(embed.weight, std=self.config.d_model**-0.5)
            with torch.no_grad():
                embed.weight[self.config.pad_id].zero_()

    def embed(self, ids: Tensor, table: nn.Embedding, positions: PositionalEncoding, offset: int = 0) -> Tensor:
        """(B, T) ids -> (B, T, d_model): √d_model-scaled embedding plus position."""
        return self.embed_dropout(positions(table(ids) * math.sqrt(self.config.d_model), offset))

    def encode(self, src: Tensor, need_weights: bool = False) -> Encoded:
        """src: (B, S) ids, padded with pad_id."""
        src_mask = padding_mask(src, self.config.pad_id)
        x = self.embed(src, self.src_embed, self.src_pos)
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, src_mask, need_weights)
            weights.append(w)
        return Encoded(self.encoder_norm(x), src_mask, tuple(weights) if need_weights else None)

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, need_weights: bool = False) -> Decoded:
        """Teacher-forced pass: tgt_in (B, T) = BOS y1 … y(T-1); row i predicts y(i+1)."""
        tgt_mask = causal_mask(tgt_in.size(1), tgt_in.device) & padding_mask(tgt_in, self.config.pad_id)
        y = self.embed(tgt_in, self.tgt_embed, self.tgt_pos)
        self_ws, cross_ws = [], []
        for layer in self.decoder_layers:
            y, self_w, cross_w, _ = layer(y, memory, tgt_mask, src_mask, need_weights)
            self_ws.append(self_w)
            cross_ws.append(cross_w)
        if not need_weights:
            return Decoded(self.decoder_norm(y), None, None)
        return Decoded(self.decoder_norm(y), tuple(self_ws), tuple(cross_ws))

    def start_caches(self, memory: Tensor) -> tuple[LayerCache, ...]:
        """Per-layer caches before the first decoding step (cross keys/values computed once)."""
        return tuple(layer.empty_cache(memory) for layer in self.decoder_layers)

    def decode_step(
        self, last_tokens: Tensor, caches: tuple[LayerCache, ...], src_mask: Tensor, need_weights: bool = False
    ) -> Step:
        """One cached step: last_tokens (B, 1) at position t = cached length; returns next-token logits (B, V)."""
        position = caches[0].self_k.size(2)
        y = self.embed(last_tokens, self.tgt_embed, self.tgt_pos, offset=position)
        new_caches, self_ws, cross_ws = [], [], []
        for layer, cache in zip(self.decoder_layers, caches, strict=True):
            y, self_w, cross_w, new_cache = layer(y, None, None, src_mask, need_weights, cache)
            new_caches.append(new_cache)
            self_ws.append(self_w)
            cross_ws.append(cross_w)
        logits = self.output(self.decoder_norm(y[:, -1]))  # (B, V)
        if not need_weights:
            return Step(logits, tuple(new_caches), None, None)
        return Step(logits, tuple(new_caches), tuple(self_ws), tuple(cross_ws))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Logits (B, T, V) for every target position (tests and small batches; training projects real positions only)."""
        memory, src_mask, _ = self.encode(src)
        return self.output(self.decode(tgt_in, memory, src_mask).hidden)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
