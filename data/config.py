"""What a training run reads and how: corpora, cleaning, split, vocabulary, source noise ([data] in a preset)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from data.noise import NoiseConfig
from model.typed_config import ConfigError

Format = Literal["auto", "tsv", "anki", "csv", "moses"]  # "auto" detects the format from the file
FORMATS: tuple[str, ...] = get_args(Format)


@dataclass(frozen=True)
class DataConfig:
    corpora: tuple[str, ...] = ()
    format: Format = "auto"
    src_lang: str = "es"
    tgt_lang: str = "en"
    columns: tuple[str, ...] = ()  # languages of the tsv/anki columns in order, e.g. ["en", "es"]; () = format default
    skip_bad_lines: bool = False
    vocab_size: int = 8000
    joint_vocab: bool = True
    min_tokens: int = 1
    max_tokens: int = 80
    max_ratio: float = 3.0
    dev_size: int = 2000
    test_size: int = 3000
    split_seed: int = 1234
    exclude: tuple[str, ...] = ()  # TSV files of held-out sentences (first column): matching pairs are dropped
    max_len: int = 128  # subword ids per side, EOS included
    noise: NoiseConfig = field(default_factory=NoiseConfig)  # source noise like typing: [data.noise] in TOML
    sampling_alpha: float = 0.0  # SentencePiece subword sampling on the training set (0 = off; 0.1 is usual)

    def __post_init__(self) -> None:
        if not 0.0 <= self.sampling_alpha <= 1.0:
            raise ConfigError(f"data.sampling_alpha must be in [0, 1], got {self.sampling_alpha!r}")
