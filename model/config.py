"""Model hyper-parameters: one frozen, typed record, chosen in a training preset and saved as JSON beside the weights."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Literal

from model.bounded_read import read_json
from model.typed_config import ConfigError, check_at_least, from_dict

__all__ = ["MAX_ELEMENTS", "MAX_SIZES", "ConfigError", "ModelConfig", "from_dict"]

# Upper bounds, checked before any tensor is built: far above any model this lab trains (the shipped model has
# d_model 256, 8+3 layers, 8001 pieces), low enough that a corrupt or hostile config.json fails at once instead of
# allocating gigabytes. MAX_ELEMENTS caps ``ModelConfig.n_elements`` (2e9 floats: 8 GB in float32).
MAX_SIZES = {
    "d_model": 8192,
    "n_heads": 128,
    "d_ff": 65536,
    "n_encoder_layers": 64,
    "n_decoder_layers": 64,
    "max_positions": 65536,
    "src_vocab_size": 1_000_000,
    "tgt_vocab_size": 1_000_000,
}
MAX_ELEMENTS = 2_000_000_000
SPECIAL_IDS = ("pad_id", "unk_id", "bos_id", "eos_id")  # each a different piece of both vocabularies


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape of an encoder–decoder Transformer (Vaswani et al. 2017, with the pre-norm option)."""

    src_vocab_size: int = 0  # 0 in a training preset: filled from the tokenizer (with the special ids below)
    tgt_vocab_size: int = 0
    d_model: int = 256
    n_heads: int = 4
    d_ff: int = 1024
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    dropout: float = 0.1
    attention_dropout: float = 0.0
    max_positions: int = 256
    norm: Literal["pre", "post"] = "pre"
    positional: Literal["sinusoidal", "learned"] = "sinusoidal"
    share_embeddings: bool = True  # one embedding for source and target (joint vocabulary)
    tie_output: bool = True  # output projection shares the target embedding matrix
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        check_at_least("model", self, ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers"))
        check_at_least("model", self, ("max_positions",), 2)
        check_at_least("model", self, ("src_vocab_size", "tgt_vocab_size"), 0)
        for name, bound in MAX_SIZES.items():
            if getattr(self, name) > bound:
                raise ConfigError(f"model.{name} must be at most {bound}, got {getattr(self, name)!r}")
        if self.n_elements > MAX_ELEMENTS:
            raise ConfigError(
                f"model: {self.n_elements:,} parameters and position entries, more than the limit {MAX_ELEMENTS:,} "
                "(d_model, d_ff, layers, vocabulary sizes, max_positions)"
            )
        if self.d_model % self.n_heads:
            raise ConfigError(f"model.d_model ({self.d_model}) must be divisible by model.n_heads ({self.n_heads})")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError("share_embeddings needs src_vocab_size == tgt_vocab_size")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.attention_dropout < 1.0:
            raise ConfigError("dropout and attention_dropout must be in [0, 1)")
        vocab = min(self.src_vocab_size, self.tgt_vocab_size)  # 0 until a tokenizer sets them
        ids = {name: getattr(self, name) for name in SPECIAL_IDS}
        for name, value in ids.items():
            if value < 0 or 0 < vocab <= value:
                raise ConfigError(f"model.{name} must be in [0, {vocab or 'the vocabulary size'}), got {value}")
            if (same := next((n for n, v in ids.items() if v == value and n != name), None)) is not None:
                raise ConfigError(f"model.{name} and model.{same} are both {value}; the four special ids must differ")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def n_elements(self) -> int:
        """Floats ``Transformer(self)`` allocates: its parameters (tied ones once) plus both position tables."""
        d, f = self.d_model, self.d_ff
        attention = 4 * d * d + 4 * d  # in_proj (3d x d) and out_proj (d x d), with biases
        norm = 2 * d
        ffn = 2 * d * f + f + d
        encoder = self.n_encoder_layers * (attention + ffn + 2 * norm)
        decoder = self.n_decoder_layers * (2 * attention + ffn + 3 * norm)
        final_norms = 2 * norm if self.norm == "pre" else 0
        embeddings = self.src_vocab_size * d + (0 if self.share_embeddings else self.tgt_vocab_size * d)
        output = 0 if self.tie_output else d * self.tgt_vocab_size
        positions = 2 * self.max_positions * d
        return encoder + decoder + final_norms + embeddings + output + positions

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2) + "\n"

    @classmethod
    def from_json_file(cls, path: Path) -> ModelConfig:
        """Load and validate ``config.json`` (read bounded: model/bounded_read.py); errors name the file and the key."""
        values = read_json(Path(path), ConfigError)
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        try:
            config = from_dict(cls, values)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
        if min(config.src_vocab_size, config.tgt_vocab_size) < 1:
            raise ConfigError(f"{path}: src_vocab_size and tgt_vocab_size must be set (at least 1)")
        return config
