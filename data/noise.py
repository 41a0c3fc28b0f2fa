"""Source-side noise that looks like what people type: no final punctuation, no ¿¡, lowercase, no accents, no commas.

Every Tatoeba sentence starts with a capital and ends with punctuation, so a model trained on it alone
learns to stop only after a period, and reads "hola mundo" as something it has never seen. Training on
a noised copy of some Spanish sentences (a new draw each epoch) teaches it both forms; the English side
is never noised, so "hola mundo" still asks for "Hello world.". People skip commas too: a model trained without
that transform reads "Hola, mundo" as "Hi, world." and "Hola mundo" as "Hide world.".

``typed`` applies every transform: the "typed" evaluation scores each test set that way.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, fields

from model.typed_config import ConfigError

FINAL_PUNCTUATION = ".!?…;:"
INVERTED_MARKS = "¿¡"
PAUSE_COMMA = re.compile(r",(?=\s|$)")  # a comma between words; "3,5" keeps its decimal comma
INNER_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")  # the apostrophe of a contraction: "don't", "I'm", "Tom's"


@dataclass(frozen=True)
class NoiseConfig:
    """``p``: share of source sentences noised each epoch (0 = off); then each transform with its own chance."""

    p: float = 0.0
    drop_final_punct: float = 0.6
    drop_inverted: float = 0.5
    lowercase: float = 0.5
    strip_accents: float = 0.3
    drop_commas: float = 0.0  # 0 keeps the draws of runs made before this transform existed
    drop_apostrophes: float = 0.0  # "don't" → "dont", "I'm" → "Im": English contractions typed loosely (0: no draw)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"data.noise.{f.name} must be a probability in [0, 1], got {value!r}")

    @property
    def enabled(self) -> bool:
        return self.p > 0


TYPED = NoiseConfig(p=1.0, drop_final_punct=1.0, drop_inverted=1.0, lowercase=1.0, strip_accents=1.0, drop_commas=1.0)
TYPED_DESCRIPTION = "lowercase, no accents, no ¿¡, no commas, no final punctuation"  # what ``typed`` does, for reports


def drop_final_punctuation(text: str) -> str:
    return text.rstrip().rstrip(FINAL_PUNCTUATION + " ")


def drop_inverted_marks(text: str) -> str:
    return "".join(ch for ch in text if ch not in INVERTED_MARKS).replace("  ", " ").strip()


def drop_commas(text: str) -> str:
    """ "Hola, mundo" → "Hola mundo": every comma between words goes, as when typing in a hurry."""
    return PAUSE_COMMA.sub("", text)


def drop_apostrophes(text: str) -> str:
    """ "I don't know" → "I dont know": the apostrophes of contractions left out, as people type in a chat."""
    return INNER_APOSTROPHE.sub("", text)


def strip_accents(text: str) -> str:
    """á→a, ü→u, ñ→n: every combining mark removed (what a keyboard without Spanish keys produces)."""
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def add_noise(text: str, noise: NoiseConfig, rng: random.Random) -> str:
    """``text`` unchanged with probability 1 - p, else with each transform drawn independently. Always draws the same
    number of random numbers for a given config, so one sentence's outcome never shifts the next's (the comma and
    apostrophe draws are taken only when that transform is on, so older configs keep their draws)."""
    draws = [rng.random() for _ in range(6 if noise.drop_commas > 0 else 5)]
    apostrophe_draw = rng.random() if noise.drop_apostrophes > 0 else 1.0
    if draws[0] >= noise.p:
        return text
    out = text
    if draws[1] < noise.drop_final_punct:
        out = drop_final_punctuation(out)
    if draws[2] < noise.drop_inverted:
        out = drop_inverted_marks(out)
    if draws[3] < noise.lowercase:
        out = out.lower()
    if draws[4] < noise.strip_accents:
        out = strip_accents(out)
    if noise.drop_commas > 0 and draws[5] < noise.drop_commas:
        out = drop_commas(out)
    if apostrophe_draw < noise.drop_apostrophes:
        out = drop_apostrophes(out)
    return out or text  # a sentence made only of punctuation keeps its form


def typed(text: str) -> str:
    """The sentence as typed in a hurry: every transform applied (deterministic)."""
    return add_noise(text, TYPED, random.Random(0))
