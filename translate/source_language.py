"""Whether a text is in the language the model translates from: langid's guess, checked against the model's corpus.

langid.py (Lui & Baldwin 2012; offline, 97 languages) alone is no judge of one short sentence: of the shipped model's
2,000 held-out dev sentences it names another language first for 372 ("Te echaré de menos." French). The words say
more: a Spanish sentence's words are mostly words the model's own corpus writes in lowercase (its name guard keeps
their counts), a French or German one's are not. A text is taken for another language only when both agree: fewer
than ``MIN_KNOWN_SHARE`` of its words (capitalised words after its start aside: names) are the corpus's
(``MIN_KNOWN_SHARE_TYPED`` for a text without capitals, whose names cannot be told from its words), and langid gives
the source language under ``MAX_SOURCE_PROB``. The translator does not guard a text refused here
(translate/translator.py); what it accepts is measured in docs/results.md. A model without a guard has no corpus
words here: its every text is taken as its own.
"""

from __future__ import annotations

import functools

from langid.langid import LanguageIdentifier, model

from translate.name_guard import WORD, NameGuard, plain

MIN_KNOWN_SHARE = 0.6  # of a text's words, words the corpus writes in lowercase at least KNOWN_USES times
MIN_KNOWN_SHARE_TYPED = 0.4  # typed without capitals, names count as words: "klaus dieter queria proteger a maria"
KNOWN_USES = 2  # a word seen once may be a typo or a name typed in lowercase
MAX_SOURCE_PROB = 0.05  # langid's probability of the source language under which it is not the text's


@functools.cache
def identifier() -> LanguageIdentifier:
    """langid's bundled model, loaded once per process (about a second)."""
    return LanguageIdentifier.from_modelstring(model, norm_probs=True)


def looks_like(text: str) -> tuple[str, float]:
    """langid's best guess for ``text``: (ISO 639-1 code, probability 0–1); ("", 0.0) for text without letters."""
    if not any(ch.isalpha() for ch in text):
        return "", 0.0
    code, prob = identifier().classify(text)
    return code, float(prob)


def known_share(text: str, guard: NameGuard) -> float | None:
    """The share of ``text``'s words the guard's corpus writes in lowercase ``KNOWN_USES`` times or more; a
    capitalised word is left out (a name) unless it is the first and the corpus has seen it ("Alban Soffici
    apestaba…" counts from "apestaba"), and so are numbers. None when no word is left."""
    tokens = [m.group() for m in WORD.finditer(text) if not any(ch.isdigit() for ch in m.group())]
    seen = lambda w: any(plain(w) in counts for counts in (guard.lowercase, guard.capital, guard.initial))  # noqa: E731
    words = [w for k, w in enumerate(tokens) if not w[:1].isupper() or (k == 0 and seen(w))]
    if not words:
        return None
    return sum(guard.lowercase.get(plain(w), 0) >= KNOWN_USES for w in words) / len(words)


def is_source_language(text: str, guard: NameGuard | None) -> bool:
    """Whether ``text`` is in the source language of the model ``guard`` belongs to (``guard.lang``): False only
    when its words are mostly not the corpus's and langid agrees (see the module's docstring). True for text
    without letters, and for every text of a model without a guard (nothing to check the words against)."""
    if guard is None or not any(ch.isalpha() for ch in text):
        return True
    share = known_share(text, guard)
    typed = not any(ch.isupper() for ch in text)
    if share is not None and share >= (MIN_KNOWN_SHARE_TYPED if typed else MIN_KNOWN_SHARE):
        return True
    return dict(identifier().rank(text)).get(guard.lang, 0.0) >= MAX_SOURCE_PROB
