"""Several models decoding as one: at each step the average of their log-probabilities (then renormalised); a
teacher for distillation (``workshop/distill.py``).

``Ensemble`` offers what ``model/decode.py`` asks of a model (``config``, ``encode``, ``start_caches``,
``decode_step``), so greedy and beam search run unchanged over it. The members must share one vocabulary and its
special ids (a teacher made of the team's models, all trained with the same tokenizer). An ensemble of one decodes
exactly as its member; two copies of a model decode exactly as the model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from torch import Tensor, nn

from model.attention_maps import AttentionMaps
from model.config import ConfigError, ModelConfig
from model.layers import KVCache
from model.transformer import Encoded, Step, Transformer
from model.weights import ModelLoadError
from translate.model_dir import load_model
from translate.translator import Translation, Translator, load_guard

SHARED = ("src_vocab_size", "tgt_vocab_size", "pad_id", "unk_id", "bos_id", "eos_id")  # what members must agree on


class Ensemble(nn.Module):
    """Members decoded side by side; their memories travel concatenated along the feature axis."""

    def __init__(self, members: list[Transformer]) -> None:
        super().__init__()
        if not members:
            raise ConfigError("an ensemble needs at least one model")
        first = members[0].config
        for member in members[1:]:
            for name in SHARED:
                if getattr(member.config, name) != getattr(first, name):
                    raise ConfigError(
                        f"ensemble members disagree on model.{name} ({getattr(first, name)} and "
                        f"{getattr(member.config, name)}): they must share one vocabulary"
                    )
        self.members = nn.ModuleList(members)
        # The shortest member bounds the positions; the rest of the config is the first member's.
        self.config: ModelConfig = dataclasses.replace(
            first, max_positions=min(m.config.max_positions for m in members)
        )

    def _split(self, memory: Tensor) -> list[Tensor]:
        return list(memory.split([m.config.d_model for m in self.members], dim=-1))  # each (B, S, d_model of member)

    def encode(self, src: Tensor, need_weights: bool = False) -> Encoded:
        """src (B, S) -> every member's memory, concatenated: (B, S, sum of d_model)."""
        encoded = [m.encode(src) for m in self.members]
        return Encoded(torch.cat([e.memory for e in encoded], dim=-1), encoded[0].src_mask, None)

    def start_caches(self, memory: Tensor, capacity: int | None = None) -> tuple[KVCache, ...]:
        """Every member's caches, one flat tuple (``decode_step`` splits it again)."""
        caches: list[KVCache] = []
        for member, part in zip(self.members, self._split(memory), strict=True):
            caches += member.start_caches(part, capacity or self.config.max_positions)
        return tuple(caches)

    def decode_step(
        self, last_tokens: Tensor, caches: tuple[KVCache, ...], src_mask: Tensor, need_weights: bool = False
    ) -> Step:
        """One step of every member; "logits" are the mean of their log-probabilities (B, V)."""
        log_probs, start = [], 0
        for member in self.members:
            n = member.config.n_decoder_layers
            step = member.decode_step(last_tokens, caches[start : start + n], src_mask)
            log_probs.append(step.logits.float().log_softmax(-1))
            start += n
        return Step(torch.stack(log_probs).mean(0), caches, None, None)


class EnsembleTranslator(Translator):
    """A Translator whose model is an ``Ensemble``: it translates; its maps would belong to no one model."""

    def attention(self, translation: Translation, hypothesis: int = 0) -> AttentionMaps:
        raise ValueError("an ensemble has no attention maps of its own: open one of its models")


def load_ensemble(directories: list[Path], device: str = "cpu") -> Translator:
    """One model directory: that model; several: an ``Ensemble`` of them, which must share one tokenizer."""
    if len(directories) == 1:
        return Translator.load(directories[0], device)
    loaded = [load_model(d, device) for d in directories]
    first = loaded[0].tokenizer
    for directory, other in zip(directories[1:], loaded[1:], strict=True):
        if other.tokenizer.proto() != first.proto():
            raise ModelLoadError(f"{directory}: its tokenizer differs from {directories[0]}'s (an ensemble shares one)")
    try:
        return EnsembleTranslator(Ensemble([item.model for item in loaded]), first, load_guard(directories[0]))
    except ConfigError as err:
        raise ModelLoadError(f"{', '.join(map(str, directories))}: {err}") from None
