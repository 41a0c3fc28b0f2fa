"""Far from what the model learned: an input whose words its corpus hardly holds, or longer than nearly all of its
sentences, and an output that repeats itself.

Tatoeba's sentences are short and everyday (six words on average). On news, formal and technical text the model's
output falls to a gist: on the 40 such sentences written for this lab (workshop/bench/far-es-en.tsv, with their
references) the shipped Spanish → English model scores chrF 37, against 71 on its dev split. Its probability alone
does not say so reliably (a confident "The police arrested five people with a traffic jam."), so the page reads two
cheap signs from the corpus's own word counts, kept beside the weights in the name guard: the input's words (names
and numbers the guard read as stand-ins aside) that training used fewer than RARE_USES times, and the length in
words of its longest sentence. How often each model's dev sentences and the far list are flagged, and its chrF on
both, are measured by ``python -m workshop bench uncertainty --write`` and kept in its ``doubt.json`` (``FarFigures``).

An output that says the same word or words three times in a row ("process process process") is a decoder that lost
its place, whatever the input. The page says these signs in one note with the model's doubt
(lab/page/language_check.py ``unsure``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from translate.name_guard import WORD, NameGuard, plain
from translate.translator import Translation

RARE_USES = 3  # a word training used fewer times than this is rare for the model
MIN_RARE = 2  # rare words that make an input far (dev: 2 % of sentences have two; the far list: 78 %)
LONG_WORDS = 18  # words in a sentence that make it far (dev: under 1 % are this long; the far list: 20 %)
SHOWN_RARE = 6  # rare words the note names; it counts the rest
LOOP = re.compile(r"\b(\w+(?:\W+\w+){0,3}?)(?:\W+\1\b){2,}", re.IGNORECASE)  # 1–4 words said three times running


@dataclass(frozen=True)
class FarFigures:
    """One model's measurement of the flag: the share of its dev sentences and of the far list it flags, and its
    chrF on each (``python -m workshop bench uncertainty --write``)."""

    flagged_dev: float
    flagged_far: float
    chrf_dev: float
    chrf_far: float
    n_far: int  # sentences of the far list

    def said(self) -> str:
        return (
            f"on {self.n_far} news and formal sentences written for this lab, this model scores chrF "
            f"{self.chrf_far:.0f} against {self.chrf_dev:.0f} on its own dev split, and this sign marks "
            f"{self.flagged_far:.0%} of them and {self.flagged_dev:.0%} of the dev sentences"
        )


@dataclass(frozen=True)
class Reading:
    """How far an input is from the corpus: its longest sentence in words and its rare words."""

    longest: int
    rare: tuple[str, ...]

    @property
    def far(self) -> bool:
        return len(self.rare) >= MIN_RARE or self.longest >= LONG_WORDS


def reading(sentences: list[Translation], guard: NameGuard) -> Reading:
    """The words of each sentence as the model read it (a guarded name counts as its stand-in, a number not at all)
    against the uses ``guard``'s corpus made of them."""
    longest, rare = 0, []
    for sentence in sentences:
        text = sentence.guarded.read_as if sentence.guarded else sentence.source
        words = [w for w in WORD.findall(text) if not any(ch.isdigit() for ch in w)]
        longest = max(longest, len(words))
        rare += [w for w in words if uses(guard, plain(w)) < RARE_USES and w not in rare]
    return Reading(longest, tuple(rare))


def uses(guard: NameGuard, key: str) -> int:
    """How often the source side of ``guard``'s training pairs used the plain word ``key``, in any case."""
    return guard.lowercase.get(key, 0) + guard.capital.get(key, 0) + guard.initial.get(key, 0)


def far_note(r: Reading, figures: FarFigures | None) -> str:
    """What the page says of an input far from the corpus ("" when it is not)."""
    if not r.far:
        return ""
    signs = []
    if len(r.rare) >= MIN_RARE:
        named = ", ".join(f"“{w}”" for w in r.rare[:SHOWN_RARE]) + (" …" if len(r.rare) > SHOWN_RARE else "")
        signs.append(f"{len(r.rare)} of its words ({named}) occur fewer than {RARE_USES} times in its training corpus")
    if r.longest >= LONG_WORDS:
        signs.append(
            f"a sentence of {r.longest} words, where nearly all of its training sentences are under {LONG_WORDS}"
        )
    figure = f" Measured: {figures.said()}." if figures else ""
    return (
        f"This text is far from what the model learned from (short everyday sentences): {' and '.join(signs)}. "
        f"Read the translation as a rough gist.{figure}"
    )


def loop(output: str) -> str:
    """The words an output says three or more times in a row ("process process process" → "process"), or ""."""
    found = LOOP.search(output)
    return found.group(1) if found else ""
