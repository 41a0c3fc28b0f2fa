"""Guided examples: sentences the shipped model translates correctly, each with one line on what to look for.

An example stays only while the shipped model's translation is one of its accepted answers
(tests/test_examples.py checks every example against the model in ``checkpoints/``): an example the model gets
wrong teaches the wrong thing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class GuidedExample:
    source: str
    accepted: tuple[str, ...]  # right translations (compared after ``normalise``)
    look_for: str  # one line: where to look and what to see


EXAMPLES: tuple[GuidedExample, ...] = (
    GuidedExample(
        "El gato negro duerme.",
        ("The black cat sleeps.", "The black cat is sleeping."),
        "Reordering: in cross-attention the row for “black” looks at “negro”, which comes after “gato” — "
        "the alignment lines cross.",
    ),
    GuidedExample(
        "¿Dónde está la estación de tren?",
        ("Where's the train station?", "Where is the train station?"),
        "“train station” turns “estación de tren” around: “train” looks at “tren”, “station” at “estación”.",
    ),
    GuidedExample(
        "Tengo un perro blanco.",
        ("I have a white dog.", "I've got a white dog."),
        "Two English words from one Spanish one: “I” and “have” both look at “Tengo”; then “white” jumps ahead "
        "to “blanco”.",
    ),
    GuidedExample(
        "No sé lo que quieres decir.",
        ("I don't know what you mean.", "I do not know what you mean."),
        "“quieres decir” (want to say) becomes “mean”: in cross-attention “you” and “mean” both look at “quieres”.",
    ),
    GuidedExample(
        "Ella no habla inglés.",
        ("She doesn't speak English.", "She does not speak English."),
        "“doesn't” is several subwords, all drawn from “no”: switch on whole words to see them as one row.",
    ),
    GuidedExample(
        "¿Cuántos años tienes?",
        ("How old are you?",),
        "An idiom: “How many years do you have?” in Spanish. “old” looks at “años”, “are” at “tienes”.",
    ),
    GuidedExample(
        "Me gusta leer libros.",
        ("I like reading books.", "I like to read books."),
        "Almost word for word: the cross-attention is a clean diagonal, although “Me gusta” literally means "
        "“it pleases me”.",
    ),
    GuidedExample(
        "Tengo hambre.",
        ("I'm hungry.", "I am hungry."),
        "“I” is no Spanish word: the subject hides in the verb ending (“Teng|o”). In the decoder's masked "
        "self-attention, each row looks only left.",
    ),
)

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})


def normalise(text: str) -> str:
    """Case, spacing, curly quotes and Unicode forms ignored: what two right answers may differ in."""
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).casefold()
    return re.sub(r"\s+", " ", text).strip()


def is_accepted(translation: str, example: GuidedExample) -> bool:
    return normalise(translation) in {normalise(a) for a in example.accepted}


def by_source(source: str) -> GuidedExample | None:
    """The guided example whose Spanish is ``source`` (None for a sentence typed by the learner)."""
    return next((e for e in EXAMPLES if e.source == source), None)
