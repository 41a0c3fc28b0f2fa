"""Case markup: the source read in lowercase, with a mark after each word that began with a capital.

Without it, "Hola" and "hola" are different subwords ("▁Hol" + "a", the start of "Holanda", against "▁hola"), and
a model that learned "hola mundo" → "Hi, world." can still say "Hide world." for "Hola mundo". With it, both read
"▁hola", and "Hola" adds the mark: ``hola⇧ mundo``. The idea is OpenNMT Tokenizer's ``case_markup`` and the case
factors of Marian, reduced to what Spanish needs: the first letter of a word.

A text typed all in capitals ("HOLA MUNDO") is read in sentence case first ("Hola mundo"): the corpus has no such
sentence, and read as it is, its words become acronym pieces ("Inha, MNAAA.").

The mark is a SentencePiece user-defined symbol; a tokenizer whose vocabulary holds it reads the source this way
(``model.tokenizer.Tokenizer.case_markup``), so the tokenizer file is the one place that says so.
"""

from __future__ import annotations

import re

MARK = "\u21e7"  # ⇧ "the word before began with a capital"
_WORD = re.compile(r"\b[^\W\d_]\w*")  # a word: a letter, then letters, digits or _ ("3D" is not one)
_MARKED = re.compile(rf"\b([^\W\d_])(\w*){MARK}")


MIN_SHOUTED_WORDS = 2  # one word in capitals is an acronym ("ONU"); two or more and no lowercase letter: shouting


def unshout(text: str) -> str:
    """ "¿DÓNDE ESTÁ EL BAÑO?" -> "¿Dónde está el baño?": a text whose words are all in capitals, sentence-cased.

    Only when it has at least ``MIN_SHOUTED_WORDS`` words and not one lowercase letter; any other text is returned
    as it is. Proper nouns come out in lowercase ("VIVO EN MADRID" -> "Vivo en madrid"), as typed casually.
    """
    if len(_WORD.findall(text)) < MIN_SHOUTED_WORDS or any(ch.islower() for ch in text):
        return text
    lower = text.lower()
    first = _WORD.search(lower)
    assert first is not None  # the words found above
    return lower[: first.start()] + lower[first.start()].upper() + lower[first.start() + 1 :]


def mark_case(text: str) -> str:
    """ "¿Dónde vive Ana?" -> "¿dónde⇧ vive ana⇧?": each word's capital first letter lowered, ⇧ after the word.

    Capitals inside a word stay ("McDonald" -> "mcDonald⇧"), and a word in capitals stays as it is ("ONU", "TV",
    "XIX": Tatoeba's are acronyms), unless the whole text is in capitals (``unshout``). A ⇧ already in the text is
    dropped first, so every mark in the result is one this function put there.
    """

    def lower_first(word: re.Match[str]) -> str:
        w = word.group()
        lower = w[0].lower()
        if lower == w[0] or len(lower) != 1 or (len(w) > 1 and w.isupper()):  # "İ" lowers to two characters
            return w
        return lower + w[1:] + MARK

    return _WORD.sub(lower_first, unshout(text.replace(MARK, "")))


def unmark_case(text: str) -> str:
    """The inverse for display: "hola⇧" -> "Hola" (text without marks is returned as it is)."""
    return _MARKED.sub(lambda m: m.group(1).upper() + m.group(2), text)
