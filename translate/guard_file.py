"""What a ``name_guard.json`` must hold, checked once on load: each field's type, each list within a size, stand-ins
that are words. A file that breaks one is ModelLoadError, one line naming the file, the field and what was expected;
nothing is found wrong later, at translate time."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from model.weights import ModelLoadError

MAX_GUARD_BYTES = 16 << 20  # a guard file is under 1 MB for a corpus of 120,000 pairs
MAX_WORDS = 500_000  # words of the corpus's counts (the shipped model's: 22,703)
MAX_LISTED = 100_000  # listed names, places, letter trigrams (the shipped model's: 3,256, 1,112 and 4,803)
MAX_PLACE_WORDS = 8  # words of one place ("Santa Cruz de Tenerife": 4)
MAX_STAND_INS = 100  # stand-ins of one kind (a guard writes 9)
STAND_IN = {"number": re.compile(r"[0-9]{1,9}"), "": re.compile(r"[^\W\d_]{1,40}")}  # "30"; "Tom", "Boston"
AGAIN = "write it again with python -m training guard --model DIR"


def is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def is_odds(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def is_table(value: Any, limit: int, entry: Any) -> bool:
    """Whether ``value`` is an object of at most ``limit`` entries, each value passing ``entry``."""
    return isinstance(value, dict) and len(value) <= limit and all(entry(v) for v in value.values())


def is_words(value: Any, limit: int, most_words: int = MAX_WORDS) -> bool:
    """Whether ``value`` is a list of at most ``limit`` strings of at most ``most_words`` words each."""
    return (
        isinstance(value, list)
        and len(value) <= limit
        and all(isinstance(w, str) and w.count(" ") < most_words for w in value)
    )


def is_stand_ins(value: Any, kinds: tuple[str, ...]) -> bool:
    """Whether ``value`` maps kinds to at most MAX_STAND_INS words each (digits for numbers), all distinct."""
    if not isinstance(value, dict) or not set(value) <= set(kinds):
        return False
    lists = value.values()
    if not all(isinstance(names, list) and len(names) <= MAX_STAND_INS for names in lists):
        return False
    every = [(kind, name) for kind, names in value.items() for name in names]
    shaped = all(isinstance(n, str) and STAND_IN["number" if k == "number" else ""].fullmatch(n) for k, n in every)
    return shaped and len({n for _, n in every}) == len(every)


def check_guard(d: Any, path: Path, kinds: tuple[str, ...]) -> None:
    """Refuse (ModelLoadError) a guard file's content ``d`` unless every field is what ``NameGuard`` reads."""

    def need(fits: bool, field: str, expected: str) -> None:
        if not fits:
            raise ModelLoadError(f"{path}: not a name guard this lab can read: {field}: expected {expected}; {AGAIN}")

    need(isinstance(d, dict), "the file", "a JSON object")
    for field in ("lowercase", "capital", "initial"):
        need(is_table(d.get(field), MAX_WORDS, is_count), field, f"at most {MAX_WORDS:,} words, each with a count ≥ 0")
    for field in ("translated", "accented"):  # "accented": empty in a file written before it existed
        need(is_words(d.get(field, []), MAX_WORDS), field, f"a list of at most {MAX_WORDS:,} words")
    genders = ("male", "female")
    need(
        is_table(d.get("people"), MAX_LISTED, genders.__contains__),
        "people",
        f"at most {MAX_LISTED:,} first names, each male or female",
    )
    need(
        is_words(d.get("places"), MAX_LISTED, MAX_PLACE_WORDS),
        "places",
        f"a list of at most {MAX_LISTED:,} places of at most {MAX_PLACE_WORDS} words",
    )
    need(
        is_table(d.get("shape"), MAX_LISTED, is_odds), "shape", f"at most {MAX_LISTED:,} trigrams, each a finite number"
    )
    need(
        is_stand_ins(d.get("stand_ins"), kinds),
        "stand_ins",
        f"for each of {', '.join(kinds)}, at most {MAX_STAND_INS} distinct one-word names (numbers: digits), none empty",
    )
    need(isinstance(d.get("lang"), str) and 0 < len(d["lang"]) <= 16, "lang", "a language code such as es")
