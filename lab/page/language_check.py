"""Garbage in: cheap signs that the input is not in the language the model translates from.

Cheap signals, none a full language identifier: no letters at all; a large share of ``<unk>`` pieces (characters
the vocabulary lacks); the translation repeating the input (the input is probably in the target language already);
English function words making up much of the input, for a model that translates into English (the commonest
mistake: typing the English sentence one wants to see); and the model's own confidence, the geometric-mean
probability of its output tokens. A confident model can still be fed English: its confidence alone is no check.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from lab.attention.explain import Explanation
from lab.page.direction import Languages

MAX_UNKNOWN_SHARE = 0.25  # more than a quarter of the pieces unknown: mostly characters never seen in training
COPY_RATIO = 0.9  # translation ≈ input (difflib ratio, case-folded): nothing was translated
MIN_COPY_WORDS = 2  # a one-word input such as a name is often rightly left as it is
MIN_TOKEN_PROB = 0.5  # geometric mean p per output token; the shipped model's good translations score 0.6-0.9
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

    @property
    def token_prob(self) -> float:
        """Geometric-mean probability of an output token: exp(log p / tokens)."""
        return math.exp(self.log_prob / self.n_out_tokens) if self.n_out_tokens else 1.0

    @property
    def copy_ratio(self) -> float:
        return difflib.SequenceMatcher(None, self.text.casefold().strip(), self.translation.casefold().strip()).ratio()


def evidence(result: Explanation, unk_id: int, eos_id: int) -> Evidence:
    """The best hypothesis of every piece of ``result``, summed."""
    sources = [[i for i in s.src_ids if i != eos_id] for s in result.sentences]
    return Evidence(
        text=result.source,
        translation=result.text,
        n_pieces=sum(len(ids) for ids in sources),
        n_unknown=sum(i == unk_id for ids in sources for i in ids),
        n_out_tokens=sum(len(s.best.tokens) for s in result.sentences),
        log_prob=sum(s.best.log_prob for s in result.sentences),
    )


def warnings(e: Evidence, langs: Languages) -> list[str]:
    """What the page should say before the translation; empty when the input looks like something to translate."""
    expects = f"This model translates {langs.src}"
    if not any(ch.isalpha() for ch in e.text):
        return [
            f"{expects} sentences, and the input has no words (only digits, punctuation or symbols): what it prints "
            "for this is a guess, not a translation."
        ]
    out = []
    if e.n_pieces and e.n_unknown / e.n_pieces > MAX_UNKNOWN_SHARE:
        out.append(
            f"{e.n_unknown} of the input's {e.n_pieces} pieces are unknown to the model (<unk>): characters it never "
            f"saw in training. {expects}; the output is not a translation."
        )
    words = [w.strip(".,;:!?¡¿\"'()").casefold() for w in e.text.split()]
    english = sum(w in ENGLISH_WORDS for w in words)
    if langs.tgt_code == "en" and len(words) >= MIN_COPY_WORDS and english / len(words) >= MIN_ENGLISH_SHARE:
        out.append(f"The input looks like English ({english} of its {len(words)} words are English function words), "
                   f"the language this model translates into. {expects}.")  # fmt: skip
    if len(e.text.split()) >= MIN_COPY_WORDS and e.copy_ratio >= COPY_RATIO:
        out.append(f"The output repeats the input almost unchanged: the input may already be {langs.tgt}. {expects}.")
    if not out and e.token_prob < MIN_TOKEN_PROB:
        out.append(
            f"The model is unsure of this output (average probability per token {e.token_prob:.2f}; it is usually "
            f"above {MIN_TOKEN_PROB} when the input is ordinary {langs.src}). {expects}: is the input {langs.src}, "
            "spelled as usual?"
        )
    return out
