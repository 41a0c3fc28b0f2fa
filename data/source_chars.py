"""Characters the source vocabulary lacks: read as a plain form it has, or left out, and the caller told which.

SentencePiece reads every character its vocabulary lacks as ``<unk>``, an id the model met (almost) never in
training: "Tengo hambre 😀" gave "I'm hungry, but giving it a stures.", and the curly quotes a phone types
(“Hola”) or the en dash of a word processor are such characters for the shipped vocabulary. So, before the
vocabulary reads a text, each character it lacks is replaced by its plain form when the vocabulary has that form:
typographic punctuation by its ASCII spelling (as Moses' ``normalize-punctuation.perl`` does for MT input), and
other characters by their compatibility decomposition without accents (NFKD: "ë" → "e", "ﬁ" → "fi"). A character
without such a form (an emoji, "@", "#") is left out, and ``Reading.left_out`` names it, so that the app and the
command line can say so: nothing is dropped silently. A text whose every character is known is read as it is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

# Typographic punctuation a phone or a word processor types, and brackets the vocabulary may lack: their ASCII form.
PLAIN = (
    dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"')  # “ ” „ ‟ ″
    | dict.fromkeys("\u2018\u2019\u201a\u201b\u2032`\u00b4", "'")  # ‘ ’ ‚ ‛ ′ ` ´
    | dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2212", "-")  # ‐ ‑ ‒ – — − (hyphens, dashes, minus)
    | {"\u2026": "...", "[": "(", "]": ")", "{": "(", "}": ")"}  # …
)


@dataclass(frozen=True)
class Reading:
    """A source text as the vocabulary can read it, and the characters that had to be left out."""

    text: str
    left_out: tuple[str, ...]  # each character once, in the order of its first appearance


def plain_form(ch: str) -> str:
    """The plain spelling of one character: ``PLAIN``'s, else its NFKD decomposition without combining marks."""
    if ch in PLAIN:
        return PLAIN[ch]
    return "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))


def readable(text: str, known: Callable[[str], bool]) -> Reading:
    """``text`` with each character that ``known`` rejects replaced by its plain form, or left out when that form is
    not known either. A character left out between two letters or digits leaves a space ("hola😀mundo" reads
    "hola mundo")."""
    if all(known(ch) for ch in set(text)):
        return Reading(text, ())
    out: list[str] = []
    left_out: list[str] = []
    gap = False
    for ch in text:
        if not known(ch):
            plain = plain_form(ch)
            if not plain or plain == ch or not all(known(c) for c in plain):
                left_out.append(ch)
                gap = True
                continue
            ch = plain
        if gap and out and out[-1][-1].isalnum() and ch[0].isalnum():
            out.append(" ")
        out.append(ch)
        gap = False
    return Reading("".join(out), tuple(dict.fromkeys(left_out)))
