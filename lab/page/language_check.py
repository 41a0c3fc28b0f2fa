"""Garbage in: cheap signs that the input is not in the language the model translates from.

Cheap signals, none a full language identifier: no letters at all; a large share of letters the vocabulary has no
form for (left out before the model reads) or of ``<unk>`` pieces; the translation repeating the input (the input
is probably in the target language already); English function words making up much of the input, for a model that
translates into English (the commonest mistake: typing the English sentence one wants to see). Apart from these,
the model's own confidence (the geometric-mean probability of its output tokens) speaks of the translation, not of
the input: correct Spanish the model handles badly ("De nada") is not the learner's fault, and a confident model
can still be fed English.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from lab.attention.translate_with_maps import TextTranslation
from lab.page.direction import Languages

MAX_UNKNOWN_SHARE = 0.25  # of the letters left out, or of the pieces <unk>: mostly characters never seen in training
COPY_RATIO = 0.9  # translation ≈ input (difflib ratio, case-folded): nothing was translated
MIN_COPY_WORDS = 2  # a one-word input such as a name is often rightly left as it is
# Geometric-mean p per output token under which the page says the model is unsure. Calibrated on the shipped model's
# dev split, written and typed (python -m workshop bench uncertainty; 4,000 translations, "wrong" = sentence chrF
# under 40): below 0.6, 51 % are wrong (precision) and 25 % of the wrong ones are flagged (recall); 0.5 flagged 9 %.
MIN_TOKEN_PROB = 0.6
UNSURE_PRECISION = 0.51  # of the shipped model's dev translations below MIN_TOKEN_PROB, the share that is wrong
# English function words that are not Spanish words ("he", "me", "no", "a" are, so they are left out).
ENGLISH_WORDS = frozenset(
    [
        "the",
        "is",
        "are",
        "was",
        "were",
        "am",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "where",
        "what",
        "who",
        "how",
        "why",
        "which",
        "this",
        "that",
        "these",
        "those",
        "of",
        "and",
        "to",
        "it",
        "it's",
        "i",
        "i'm",
        "you",
        "you're",
        "we",
        "they",
        "have",
        "has",
        "had",
        "do",
        "does",
        "don't",
        "did",
        "with",
        "for",
        "on",
        "at",
        "be",
        "can",
        "will",
        "would",
        "should",
        "there",
        "here",
        "from",
    ]
)
MIN_ENGLISH_SHARE = 0.3  # of the input's words, for a model whose target is English


@dataclass(frozen=True)
class Evidence:
    """What the checks read: the input, its translation, piece counts and the model's log-probability."""

    text: str
    translation: str
    n_pieces: int  # source pieces, EOS excluded
    n_unknown: int  # of them, <unk>
    n_out_tokens: int  # output tokens, EOS included
    log_prob: float  # of the whole output
    n_unreadable: int = 0  # the input's letters the vocabulary has no form for (left out before the model reads)

    @property
    def n_letters(self) -> int:
        return sum(ch.isalpha() for ch in self.text)

    @property
    def token_prob(self) -> float:
        """Geometric-mean probability of an output token: exp(log p / tokens)."""
        return math.exp(self.log_prob / self.n_out_tokens) if self.n_out_tokens else 1.0

    @property
    def copy_ratio(self) -> float:
        return difflib.SequenceMatcher(None, self.text.casefold().strip(), self.translation.casefold().strip()).ratio()


def evidence(result: TextTranslation, unk_id: int, eos_id: int) -> Evidence:
    """The best hypothesis of every piece of ``result``, summed."""
    sources = [[i for i in s.src_ids if i != eos_id] for s in result.sentences]
    unreadable = {ch.casefold() for ch in result.left_out}
    return Evidence(
        text=result.source,
        translation=result.text,
        n_pieces=sum(len(ids) for ids in sources),
        n_unknown=sum(i == unk_id for ids in sources for i in ids),
        n_out_tokens=sum(len(s.best.tokens) for s in result.sentences),
        log_prob=sum(s.best.log_prob for s in result.sentences),
        n_unreadable=sum(ch.isalpha() and ch.casefold() in unreadable for ch in result.source),
    )


def warnings(e: Evidence, langs: Languages) -> list[str]:
    """The input does not look like the model's source language: what the page says before the translation (empty
    when the input looks like something to translate)."""
    expects = f"This model translates {langs.src}"
    if not any(ch.isalpha() for ch in e.text):
        return [
            f"{expects} sentences, and the input has no words (only digits, punctuation or symbols): what it prints "
            "for this is a guess, not a translation."
        ]
    out = []
    if e.n_unreadable / e.n_letters > MAX_UNKNOWN_SHARE:
        out.append(
            f"{e.n_unreadable} of the input's {e.n_letters} letters are characters the model never saw in training "
            f"(left out before it reads the text). {expects}; the output is not a translation."
        )
    if e.n_pieces and e.n_unknown / e.n_pieces > MAX_UNKNOWN_SHARE:
        out.append(
            f"{e.n_unknown} of the input's {e.n_pieces} pieces are unknown to the model (<unk>): characters it never "
            f"saw in training. {expects}; the output is not a translation."
        )
    words = [w.strip(".,;:!?¡¿\"'()").casefold() for w in e.text.split()]
    english = sum(w in ENGLISH_WORDS for w in words)
    if langs.tgt_code == "en" and len(words) >= MIN_COPY_WORDS and english / len(words) >= MIN_ENGLISH_SHARE:
        out.append(
            f"The input looks like English ({english} of its {len(words)} words are English function words), "
            f"the language this model translates into. {expects}."
        )
    if len(e.text.split()) >= MIN_COPY_WORDS and e.copy_ratio >= COPY_RATIO:
        out.append(f"The output repeats the input almost unchanged: the input may already be {langs.tgt}. {expects}.")
    return out


def unsure(e: Evidence, langs: Languages) -> str:
    """What the page says when the input passes every language check but the model is unsure of its output ("" when
    it is not): the doubt is about this translation, not about the learner's input."""
    if e.token_prob >= MIN_TOKEN_PROB or warnings(e, langs):
        return ""
    return (
        f"The model is unsure of this translation: its average probability per output token is {e.token_prob:.2f}, "
        f"below {MIN_TOKEN_PROB}; about {UNSURE_PRECISION:.0%} of the shipped model's dev translations that score "
        f"that low are wrong. The input passed the checks for {langs.src}, so the doubt is the model's: the "
        "translation may be wrong."
    )
