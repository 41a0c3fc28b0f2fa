"""Training configuration: TOML presets plus ``--section.key=value`` overrides, validated into frozen dataclasses."""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from data.data_config import DataConfig
from model.bounded_read import MAX_SETTINGS_BYTES, read_json, read_text
from model.config import ModelConfig
from model.typed_config import ConfigError, check_at_least, check_seed, from_dict


@dataclass(frozen=True)
class GuidedAlignmentConfig:
    """Guided alignment (Garg et al. 2019): one cross-attention head is taught eflomal's links of the training
    pairs ([optim.guided_alignment] in a preset; training/guided_alignment.py). Needs eflomal installed."""

    weight: float = 0.0  # of the alignment loss beside the translation loss; 0 = off (Garg et al. used 0.05)
    layer: int = -2  # the decoder layer, 0-based, negative from the top: -2 = the penultimate (Garg et al.)
    head: int = 0  # 0-based (workshop.bench.alignment names layers and heads 1-based)

    def __post_init__(self) -> None:
        check_at_least("optim.guided_alignment", self, ("weight", "head"), 0)

    @property
    def enabled(self) -> bool:
        return self.weight > 0


@dataclass(frozen=True)
class OptimConfig:
    max_tokens: int = 4096  # padded tokens per batch (per process)
    accumulate: int = 1
    lr: float = 1e-3
    warmup_steps: int = 1000
    schedule: Literal["inverse_sqrt", "cosine", "constant"] = "inverse_sqrt"
    min_lr_ratio: float = 0.0  # cosine floor, as a fraction of lr
    betas: tuple[float, ...] = (0.9, 0.98)
    weight_decay: float = 0.0001
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    max_steps: int = 10_000
    max_epochs: int = 100
    max_minutes: float = 0.0  # 0 = no limit; a cosine schedule then decays by time too (not bitwise-resumable)
    seed: int = 1
    guided_alignment: GuidedAlignmentConfig = field(default_factory=GuidedAlignmentConfig)

    def __post_init__(self) -> None:
        check_at_least("optim", self, ("max_tokens", "accumulate", "max_steps", "max_epochs"))
        check_at_least("optim", self, ("lr", "max_minutes", "label_smoothing", "clip_norm"), 0)
        check_seed("optim.seed", self.seed)


@dataclass(frozen=True)
class RunConfig:
    device: str = "auto"
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    threads: int = 0  # CPU threads; 0 = torch's default; at most twice this machine's cores (checked at the start)
    log_every: int = 50
    eval_every: int = 1000
    save_every: int = 0  # steps between train_state.pt + checkpoints/step-N snapshots; 0 = at each evaluation
    keep_checkpoints: int = 5
    average_last: int = 0  # average the last N saved checkpoints into the final model (0 = best only)
    dev_bleu_sentences: int = 500
    patience: int = 0  # evaluations without dev-loss improvement before stopping (0 = never)
    compile: bool = False
    # A model directory to start from (fine-tuning, or a second cycle of the schedule): its tokenizer, model shape
    # and weights; the optimizer, schedule and step count start fresh. Empty: random initial weights.
    init_from: str = ""

    def __post_init__(self) -> None:
        check_at_least("run", self, ("log_every", "eval_every"))
        check_at_least("run", self, ("save_every", "keep_checkpoints", "average_last", "patience", "threads"), 0)
        check_at_least("run", self, ("dev_bleu_sentences",), 0)

    @property
    def kept_snapshots(self) -> int:
        """``checkpoints/step-N`` snapshots kept: enough for keep_checkpoints and for average_last."""
        return max(self.keep_checkpoints, self.average_last)


@dataclass(frozen=True)
class TrainConfig:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)  # vocabulary sizes and special ids: from the tokenizer
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        if self.data.split_from and self.run.init_from:
            raise ConfigError(
                f"data.split_from = {self.data.split_from!r} with run.init_from = {self.run.init_from!r}: a run "
                "started from a model keeps that model's dev and test pairs (data.pin_parent_split); give one"
            )
        guided, m = self.optim.guided_alignment, self.model
        if not guided.enabled:
            return
        if not -m.n_decoder_layers <= guided.layer < m.n_decoder_layers:
            raise ConfigError(
                f"optim.guided_alignment.layer={guided.layer}: the decoder has {m.n_decoder_layers} layer(s) "
                f"(model.n_decoder_layers), so it must be in {-m.n_decoder_layers} … {m.n_decoder_layers - 1}"
            )
        if guided.head >= m.n_heads:
            raise ConfigError(f"optim.guided_alignment.head={guided.head}: heads are 0 … {m.n_heads - 1}")
        if self.data.sampling_alpha > 0:
            raise ConfigError(
                "optim.guided_alignment.weight > 0 with data.sampling_alpha > 0: sampled subwords are not the "
                "pieces eflomal aligned, so no pair would carry links"
            )


def _parse_value(text: str) -> Any:
    """Override values: TOML-ish literals (numbers, true/false, lists, quoted strings), else the raw string."""
    lowered = {"true": True, "false": False}.get(text.lower())
    if lowered is not None:
        return lowered
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` strings to a nested dict (a copy)."""
    merged = {section: dict(v) if isinstance(v, dict) else v for section, v in values.items()}
    for item in overrides:
        key, sep, raw = item.partition("=")
        section, dot, name = key.strip().lstrip("-").partition(".")
        if not sep or not dot:
            raise ConfigError(f"override {item!r}: expected section.key=value, e.g. optim.lr=5e-4")
        *tables, leaf = [section, *name.split(".")]  # data.noise.p: the [data.noise] table's key p
        table = merged
        for depth, part in enumerate(tables):
            inner = table.get(part, {})
            if not isinstance(inner, dict):
                raise ConfigError(
                    f"override {item!r}: {'.'.join(tables[: depth + 1])} is not a [section] of the config"
                )
            table[part] = table = dict(inner)
        table[leaf] = _parse_value(raw.strip())
    return merged


def build_train_config(values: dict[str, Any], overrides: list[str] = (), where: str = "config") -> TrainConfig:
    """Nested values (from TOML or a saved train_config.json) + overrides -> validated TrainConfig."""
    values = apply_overrides(values, list(overrides))
    try:
        return from_dict(TrainConfig, values)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None


# Keys of [data] an older lab saved in train_config.json, dropped when a saved run is read so that every model
# trained before stays loadable (the distillation mix moved to the workshop: workshop/student.py).
RETIRED_DATA_KEYS = ("distilled", "mix")


def read_saved_config(path: Path, overrides: list[str] = ()) -> TrainConfig:
    """A run's saved train_config.json (plus overrides), without the keys an older lab wrote (``RETIRED_DATA_KEYS``)."""
    values = read_json(path, ConfigError)
    if isinstance(values.get("data"), dict):
        values["data"] = {k: v for k, v in values["data"].items() if k not in RETIRED_DATA_KEYS}
    return build_train_config(values, overrides, str(path))


def load_train_config(preset: Path | None, overrides: list[str] = ()) -> TrainConfig:
    """Preset TOML (or defaults) + overrides -> validated TrainConfig; errors name the file and key."""
    values: dict[str, Any] = {}
    if preset is not None:
        try:
            values = tomllib.loads(read_text(Path(preset), MAX_SETTINGS_BYTES, ConfigError))
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{preset}: invalid TOML ({err})") from None
    return build_train_config(values, overrides, str(preset or "config"))
