"""Guided examples: sentences the shipped models translate correctly, each with one line on what to look for; a set
per direction, kept as data beside this file (``examples-*.toml``).

An example stays only while its direction's shipped model translates it to an accepted answer, and its hint only
while the hint's claim holds in the map it names (tests/test_examples.py checks both): an example the model gets
wrong, or a hint the map does not bear out, teaches the wrong thing.

A hint ("in cross-attention, layer 2, mean of heads, the row that writes “dog” puts most weight on “perro”") is a
claim about one model, kind, layer, head or mean, and token level (docs/attention-pitfalls.md §11), kept as data
(``MapClaim``): the page prints the text made from it and the test checks that very claim.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from data.tokenizer import WORD_START
from lab.attention.map_views import map_view
from lab.attention.sentence_maps import KIND_TITLES, Kind, SentenceMaps, pick
from lab.page.direction import Languages

PUNCTUATION = ".,;:!?¡¿\"'()«»“”"  # glued to a whole word's label ("dog.", "¿Dónde")


def surface(label: str) -> str:
    """A label as a claim names it: no ``▁`` word-start mark, no punctuation glued to its ends, case ignored."""
    return label.replace(WORD_START, "").strip().strip(PUNCTUATION).casefold()


@dataclass(frozen=True)
class MapClaim:
    """In ``kind`` at ``layer`` (0-based) and ``head`` (None: mean of heads), as subwords or whole ``words``, the row
    of each ``(row, column)`` pair puts most weight on that column; the decoder's rows are named by the token they
    write (docs/attention-pitfalls.md §1)."""

    kind: Kind
    layer: int
    head: int | None
    words: bool
    looks: tuple[tuple[str, str], ...]  # (row, column): the column the row puts most weight on

    @property
    def view(self) -> str:
        """ "Cross-attention, layer 2, mean of heads, subwords" (1-based, as the page's selectors name them)."""
        head = "mean of heads" if self.head is None else f"head {self.head + 1}"
        return (
            f"{KIND_TITLES[self.kind]}, layer {self.layer + 1}, {head}, {'whole words' if self.words else 'subwords'}"
        )

    @property
    def text(self) -> str:
        """The claim as the page prints it; a row is named by its token (for the decoder's maps, the one it predicts)."""
        rows, cols = (", ".join(f"“{x}”" for x in side) for side in zip(*self.looks, strict=True))
        several = len(self.looks) > 1
        whose = f"the row{'s' if several else ''} {'of' if self.kind == 'encoder' else 'predicting'}"
        return f"In {self.view[0].lower()}{self.view[1:]}, {whose} {rows} look{'' if several else 's'} most at {cols}."

    def failures(self, maps: SentenceMaps) -> list[str]:
        """What does not hold in ``maps`` (empty when the whole claim does), one line per pair."""
        if self.layer >= maps.n_layers(self.kind) or (self.head or 0) >= maps.n_heads:
            return [f"{self.view}: this model has no such layer or head"]
        view = map_view(maps, self.kind, self.words)
        weights = pick(view.weights, self.layer, self.head)
        out = []
        for row, column in self.looks:
            found = [i for i, label in enumerate(view.rows) if surface(label) == surface(row)]
            if len(found) != 1:
                out.append(f"{len(found)} rows named “{row}” in {view.rows}")
                continue
            best = view.cols[int(weights[found[0]].argmax())]
            if surface(best) != surface(column):
                out.append(f"the row “{row}” puts most weight on “{best}”, not “{column}”")
        return out

    def holds(self, maps: SentenceMaps) -> bool:
        return not self.failures(maps)


@dataclass(frozen=True)
class GuidedExample:
    source: str
    accepted: tuple[str, ...]  # right translations (compared after ``normalise``)
    lesson: str  # what the sentence teaches, about the languages: no claim about a model's maps
    claim: MapClaim  # where to look and what the map shows there (checked, for the shipped model, by a test)

    @property
    def look_for(self) -> str:
        return f"{self.lesson} {self.claim.text}"


def read_examples(path: Path) -> tuple[GuidedExample, ...]:
    """The guided examples of one direction from their TOML file (``[[example]]``: source, accepted, lesson, claim)."""
    found = tomllib.loads(path.read_text(encoding="utf-8"))["example"]

    def claim(c: dict) -> MapClaim:  # layer 1-based in the file; always the cross-attention's mean of heads
        return MapClaim("cross", c["layer"] - 1, None, c.get("words", False), tuple(map(tuple, c["looks"])))

    return tuple(GuidedExample(e["source"], tuple(e["accepted"]), e["lesson"], claim(e["claim"])) for e in found)


HERE = Path(__file__).resolve().parent
EXAMPLES = read_examples(HERE / "examples-es-en.toml")  # checked against checkpoints/es-en (tests/test_examples.py)
EXAMPLES_EN_ES = read_examples(HERE / "examples-en-es.toml")  # against checkpoints/en-es
EXAMPLE_SETS = {"es": EXAMPLES, "en": EXAMPLES_EN_ES}  # by the model's source language

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})


def normalise(text: str) -> str:
    """Case, spacing, curly quotes and Unicode forms ignored: what two right answers may differ in."""
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).casefold()
    return re.sub(r"\s+", " ", text).strip()


def is_accepted(translation: str, example: GuidedExample) -> bool:
    return normalise(translation) in {normalise(a) for a in example.accepted}


def examples_for(langs: Languages) -> tuple[GuidedExample, ...]:
    """Guided examples for a model of ``langs``: its source language's (Spanish for an unknown direction), else none."""
    source = langs.src_code.lower().split("-")[0] if langs.known else "es"
    return EXAMPLE_SETS.get(source, ())


def no_examples_note(langs: Languages) -> str:
    """The one line the page shows instead of the examples for a model that cannot be given them."""
    return f"No guided examples for this model: they are written for other source languages, not {langs.src}."


def by_source(source: str, langs: Languages) -> GuidedExample | None:
    """The guided example of a model of ``langs`` whose source is ``source``; None for a sentence the learner typed."""
    return next((e for e in examples_for(langs) if e.source == source), None)
