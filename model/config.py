"""Model hyper-parameters: one frozen, typed record saved as JSON beside the weights."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value is unknown, missing or of the wrong type."""


def _check_value(name: str, value: Any, annotation: Any) -> Any:
    """Return ``value`` if it fits ``annotation`` (int widens to float), else raise naming ``name``."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        if value not in typing.get_args(annotation):
            raise ConfigError(f"{name}: expected one of {typing.get_args(annotation)}, got {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            if option is type(None) and value is None:
                return None
            try:
                return _check_value(name, value, option)
            except ConfigError:
                continue
        raise ConfigError(f"{name}: expected {annotation}, got {value!r}")
    if origin in (tuple, list):
        (item_type, *_rest) = typing.get_args(annotation) or (Any,)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: expected a list, got {value!r}")
        return tuple(_check_value(f"{name}[{i}]", v, item_type) for i, v in enumerate(value))
    if annotation is Any:
        return value
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is int and isinstance(value, bool):
        raise ConfigError(f"{name}: expected int, got {value!r}")
    if not isinstance(value, annotation):
        raise ConfigError(f"{name}: expected {annotation.__name__}, got {type(value).__name__} {value!r}")
    return value


def from_dict(cls: type[T], values: dict[str, Any], where: str = "") -> T:
    """Build the frozen dataclass ``cls`` from ``values``; unknown keys and wrong types raise ConfigError."""
    prefix = f"{where}." if where else ""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]} (known: {', '.join(sorted(names))})")
    checked = {}
    for key, value in values.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            checked[key] = from_dict(hint, value, f"{prefix}{key}")
        else:
            checked[key] = _check_value(f"{prefix}{key}", value, hint)
    try:
        return cls(**checked)
    except TypeError as err:  # a required field is missing
        raise ConfigError(f"{prefix or cls.__name__ + ': '}{err}") from None


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape of an encoder–decoder Transformer (Vaswani et al. 2017, with the pre-norm option)."""

    src_vocab_size: int
    tgt_vocab_size: int
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
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError("share_embeddings needs src_vocab_size == tgt_vocab_size")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.attention_dropout < 1.0:
            raise ConfigError("dropout and attention_dropout must be in [0, 1)")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2) + "\n"

    @classmethod
    def from_json_file(cls, path: Path) -> ModelConfig:
        """Load and validate ``config.json``; errors name the file and the key."""
        try:
            values = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: file not found") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path}: not valid JSON ({err})") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        try:
            return from_dict(cls, values)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
