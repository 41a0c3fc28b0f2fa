"""What a training run reads and how: corpora, cleaning, split, vocabulary, source noise ([data] in a preset)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from data.entities import EntityConfig
from data.languages import SRC_LANG, TGT_LANG
from data.noise import NoiseConfig
from model.config import MAX_SIZES, SPECIAL_IDS
from model.typed_config import ConfigError, check_seed

Format = Literal["auto", "tsv", "anki", "csv", "moses", "tmx"]  # "auto" detects the format from the file
FORMATS: tuple[str, ...] = get_args(Format)


@dataclass(frozen=True)
class CleanConfig:
    """The cleaning filters (data.corpus.clean): the one home of their defaults."""

    min_tokens: int = 1
    max_tokens: int = 80  # whitespace tokens per side
    max_ratio: float = 3.0  # longer side / shorter side, in whitespace tokens


@dataclass(frozen=True)
class DataConfig:
    corpora: tuple[str, ...] = ()
    format: Format = "auto"
    src_lang: str = SRC_LANG  # the corpus pair as read: a TSV's first column, PREFIX.es of a Moses pair, ...
    tgt_lang: str = TGT_LANG
    columns: tuple[str, ...] = ()  # languages of the tsv/anki columns in order, e.g. ["en", "es"]; () = format default
    reverse: bool = False  # train the other direction, tgt_lang -> src_lang: every pair swapped after the split
    skip_bad_lines: bool = False
    vocab_size: int = 8000
    joint_vocab: bool = True
    min_tokens: int = CleanConfig.min_tokens
    max_tokens: int = CleanConfig.max_tokens
    max_ratio: float = CleanConfig.max_ratio
    dev_size: int = 2000
    test_size: int = 3000
    split_seed: int = 1234
    max_len: int = 128  # subword ids per side, EOS included
    noise: NoiseConfig = field(default_factory=NoiseConfig)  # source noise like typing: [data.noise] in TOML
    # names, places and numbers shared by both sides swapped for new ones each epoch: [data.entities] in TOML
    entities: EntityConfig = field(default_factory=EntityConfig)
    # The settings below are told in docs/training.md. SentencePiece subword sampling on both sides, 0 = off (smaller
    # alpha, flatter sampling; 0.1 cost 35 BLEU in 30 minutes: docs/results.md).
    sampling_alpha: float = 0.0
    split_sentences: bool = False  # also one pair per sentence of a multi-sentence pair (data.corpus.sentence_pairs)
    case_markup: bool = False  # the source read lowercased, a mark after each capitalised word (data/case_markup.py)
    # Keep an --init-from parent's dev and test pairs exactly (same corpora, checked by sha256), so a child is never
    # scored on pairs its parent trained on; false: a new split, refused if it overlaps the parent's training pairs.
    pin_parent_split: bool = True
    split_from: str = ""  # a model or run folder whose dev and test pairs a run without a parent keeps, as a child does

    def __post_init__(self) -> None:
        most = MAX_SIZES["src_vocab_size"]
        if not len(SPECIAL_IDS) < self.vocab_size <= most:  # SentencePiece gave a traceback
            raise ConfigError(
                f"data.vocab_size must be from {len(SPECIAL_IDS) + 1} to {most:,}, got {self.vocab_size!r}"
            )
        if not 0.0 <= self.sampling_alpha <= 1.0:
            raise ConfigError(f"data.sampling_alpha must be in [0, 1], got {self.sampling_alpha!r}")
        check_seed("data.split_seed", self.split_seed)
        for name in ("src_lang", "tgt_lang"):
            if not getattr(self, name).strip():
                raise ConfigError(f"data.{name} must name a language (e.g. 'es'), got {getattr(self, name)!r}")
        if self.src_lang == self.tgt_lang:
            raise ConfigError(f"data.src_lang and data.tgt_lang are both {self.src_lang!r}")
        if self.columns and (self.columns.count(self.src_lang) != 1 or self.columns.count(self.tgt_lang) != 1):
            raise ConfigError(
                f"data.columns {list(self.columns)} must name data.src_lang {self.src_lang!r} and data.tgt_lang "
                f"{self.tgt_lang!r} exactly once each (the corpus as read: data.reverse swaps afterwards)"
            )

    @property
    def clean(self) -> CleanConfig:
        """The cleaning filters this configuration asks for."""
        return CleanConfig(self.min_tokens, self.max_tokens, self.max_ratio)

    @property
    def direction(self) -> tuple[str, str]:
        """(source, target) language codes of the trained model."""
        return direction(self.src_lang, self.tgt_lang, self.reverse)


def direction(src_lang: str, tgt_lang: str, reverse: bool) -> tuple[str, str]:
    """(source, target) of a model trained on a ``src_lang``/``tgt_lang`` corpus: swapped by ``data.reverse``."""
    return (tgt_lang, src_lang) if reverse else (src_lang, tgt_lang)
