"""Typed, frozen configuration records built from plain dicts (TOML, JSON, overrides).

Every config of the project (``ModelConfig``, ``DataConfig``, ``TrainConfig``, ...) is a frozen dataclass;
``from_dict`` checks each value against its annotation and raises ``ConfigError`` naming the key
(``optim.lr``, ``data.noise.p``), so a typo or a wrong type never reaches the code that uses it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, TypeVar

from model.bounded_read import QUOTE, quoted

T = TypeVar("T")
MAX_SEED = 2**64 - 1  # the largest seed torch.manual_seed takes (its negative ones are remapped: refused here)


class ConfigError(ValueError):
    """A configuration value is unknown, missing or of the wrong type."""


def _check_value(name: str, value: Any, annotation: Any) -> Any:
    """Return ``value`` if it fits ``annotation`` (int widens to float), else raise naming ``name``."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        if value not in typing.get_args(annotation):
            raise ConfigError(f"{name}: expected one of {typing.get_args(annotation)}, got {quoted(value)}")
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            if option is type(None) and value is None:
                return None
            try:
                return _check_value(name, value, option)
            except ConfigError:
                continue
        raise ConfigError(f"{name}: expected {annotation}, got {quoted(value)}")
    if origin in (tuple, list):
        (item_type, *_rest) = typing.get_args(annotation) or (Any,)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}: expected a list, got {quoted(value)}")
        return tuple(_check_value(f"{name}[{i}]", v, item_type) for i, v in enumerate(value))
    if annotation is Any:
        return value
    if dataclasses.is_dataclass(annotation) and isinstance(value, dict):  # e.g. one item of a list of tables
        return from_dict(annotation, value, name)
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is int and isinstance(value, bool):
        raise ConfigError(f"{name}: expected int, got {quoted(value)}")
    if not isinstance(value, annotation):
        raise ConfigError(f"{name}: expected {annotation.__name__}, got {type(value).__name__} {quoted(value)}")
    return value


def from_dict(cls: type[T], values: dict[str, Any], where: str = "") -> T:
    """Build the frozen dataclass ``cls`` from ``values``; unknown keys and wrong types raise ConfigError."""
    prefix = f"{where}." if where else ""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0][:QUOTE]} (known: {', '.join(sorted(names))})")
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


def check_at_least(section: str, record: object, names: tuple[str, ...], minimum: float = 1) -> None:
    """Raise ConfigError naming ``section.name`` for the first of ``names`` below ``minimum``."""
    for name in names:
        if getattr(record, name) < minimum:
            raise ConfigError(f"{section}.{name} must be at least {minimum}, got {quoted(getattr(record, name))}")


def check_seed(key: str, seed: int) -> None:
    """Raise ConfigError naming ``key`` unless ``seed`` is one torch.manual_seed takes as it is (0 … MAX_SEED)."""
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"{key} must be 0 … {MAX_SEED} (what torch.manual_seed takes), got {quoted(seed)}")
