"""Case markup: the source read in lowercase, with a mark after each word that began with a capital.

Without it, "Hola" and "hola" are different subwords ("▁Hol" + "a", the start of "Holanda", against "▁hola"), and
a model that learned "hola mundo" → "Hi, world." can still say "Hide world." for "Hola mundo". With it, both read
"▁hola", and "Hola" adds the mark: ``hola⇧ mundo``. The idea is OpenNMT Tokenizer's ``case_markup`` and the case
factors of Marian, reduced to what Spanish needs: the first letter of a word.

Before marking, a text is put in the form every corpus sentence has (``sentence_case``): typed all in capitals
("HOLA MUNDO"), it is read in sentence case ("Hola mundo"), since read as it is its words become acronym pieces
("Inha, MNAAA."); and its first word is read with a capital ("hola mundo" as "Hola mundo"), since every Tatoeba
sentence begins with one (on the dev split it adds 0.2 BLEU and 0.3 chrF to typed input: docs/results.md).

The mark is a SentencePiece user-defined symbol; a tokenizer whose vocabulary holds it reads the source this way
(``model.tokenizer.Tokenizer.case_markup``), so the tokenizer file is the one place that says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MARK = "\u21e7"  # ⇧ "the word before began with a capital"
_WORD = re.compile(r"\b[^\W\d_]\w*")  # a word: a letter, then letters, digits or _ ("3D" is not one)
_MARKED = re.compile(rf"\b([^\W\d_])(\w*){MARK}")


MIN_SHOUTED_WORDS = 2  # one word in capitals is an acronym ("ONU"); two or more and no lowercase letter: shouting


def unshout(text: str) -> str:
    """ "¿DÓNDE ESTÁ EL BAÑO?" -> "¿Dónde está el baño?": a text of ``MIN_SHOUTED_WORDS`` words or more and not one
    lowercase letter, sentence-cased (any other text as it is). Proper nouns come out in lowercase ("VIVO EN MADRID"
    -> "Vivo en madrid"), as typed casually."""
    if len(_WORD.findall(text)) < MIN_SHOUTED_WORDS or any(ch.islower() for ch in text):
        return text
    return capitalise_first_word(text.lower())


def capitalise_first_word(text: str) -> str:
    """ "hola mundo" -> "Hola mundo", "¿dónde estás?" -> "¿Dónde estás?": the text's first letter in capitals, when
    the text begins with a word after punctuation and spaces only ("3 gatos" stays: its first word is "3") and its
    letter has a one-letter capital ("ß" stays); a second sentence in the text keeps its case."""
    first = _WORD.search(text)
    if first is None or any(ch.isalnum() for ch in text[: first.start()]):
        return text
    letter = text[first.start()]
    if not letter.islower() or len(letter.upper()) != 1:
        return text
    return text[: first.start()] + letter.upper() + text[first.start() + 1 :]


def sentence_case(text: str) -> str:
    """The text in the form every corpus sentence has: not all in capitals (``unshout``), its first letter a capital
    (``capitalise_first_word``). A text already in that form is returned as it is."""
    return unshout(capitalise_first_word(text))  # capitals first: "éL VIVE" is then a shout, read as "Él vive"


def _lower_first(word: re.Match[str]) -> str:
    w = word.group()
    lower = w[0].lower()
    if lower == w[0] or len(lower) != 1 or (len(w) > 1 and w.isupper()):  # "İ" lowers to two characters
        return w
    return lower + w[1:] + MARK


def mark_words(text: str) -> str:
    """ "Vive Ana" -> "vive⇧ ana⇧": each word's capital first letter lowered, ⇧ after the word; nothing else changes.
    Capitals inside a word stay ("McDonald" -> "mcDonald⇧"), and a word in capitals stays as it is ("ONU", "TV",
    "XIX": Tatoeba's are acronyms). A ⇧ already in the text is dropped first: every mark in the result is one it put."""
    return _WORD.sub(_lower_first, text.replace(MARK, ""))


def mark_case(text: str) -> str:
    """ "¿Dónde vive Ana?" -> "¿dónde⇧ vive ana⇧?": the text in sentence case (``sentence_case``: "hola mundo" and
    "HOLA MUNDO" read as "Hola mundo"), then its words marked (``mark_words``)."""
    return mark_words(sentence_case(text.replace(MARK, "")))


def mark_tokens(tokens: Sequence[str]) -> list[str]:
    """The tokens of one text, each marked as ``mark_case`` marks it in the text they make: ["hola", "mundo"] ->
    ["hola⇧", "mundo"] (marking each token on its own would capitalise every one)."""
    tokens = [t.replace(MARK, "") for t in tokens]
    joined = " ".join(tokens)
    cased = sentence_case(joined)
    if len(cased) != len(joined):  # a letter whose lowercase is two characters ("İ"): the tokens as they are
        return [mark_words(t) for t in tokens]
    out, at = [], 0
    for token in tokens:
        out.append(mark_words(cased[at : at + len(token)]))
        at += len(token) + 1
    return out


def unmark_case(text: str) -> str:
    """The inverse for display: "hola⇧" -> "Hola" (text without marks is returned as it is)."""
    return _MARKED.sub(lambda m: m.group(1).upper() + m.group(2), text)
