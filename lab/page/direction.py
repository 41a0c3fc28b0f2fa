"""The language pair of a model directory, read from the training configuration saved beside the weights."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from data.data_config import direction
from data.languages import name_of
from model.bounded_read import read_json
from model.run_dir import TRAIN_CONFIG_FILE


@dataclass(frozen=True)
class Languages:
    """Source and target language: codes as trained (empty when unknown) and names to show."""

    src_code: str
    tgt_code: str
    src: str  # "Spanish", the code itself for a language not in data/languages.py, "source language" when unknown
    tgt: str

    @property
    def known(self) -> bool:
        return bool(self.src_code and self.tgt_code)

    @property
    def pair(self) -> tuple[str, str]:
        return self.src_code, self.tgt_code


UNKNOWN = Languages("", "", "source language", "target language")


def languages(model_dir: Path) -> Languages:
    """The model's direction from its train_config.json (data.src_lang, data.tgt_lang, data.reverse), else UNKNOWN."""
    try:
        data = read_json(Path(model_dir) / TRAIN_CONFIG_FILE, ValueError)["data"]
        src, tgt = direction(str(data["src_lang"]).strip(), str(data["tgt_lang"]).strip(), data.get("reverse") is True)
    except (OSError, ValueError, KeyError, TypeError):
        return UNKNOWN
    if not src or not tgt:
        return UNKNOWN
    return Languages(src, tgt, name_of(src), name_of(tgt))
