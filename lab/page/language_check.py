"""Garbage in: cheap signs that the input is not in the language the model translates from.

Cheap signals: no letters at all; a large share of letters the vocabulary has no form for (left out before the
model reads) or of ``<unk>`` pieces; the language the text looks like, when its words are mostly not the model's
corpus's and langid agrees (``translate.source_language``: French and German are not Spanish); the translation
repeating the input (the input is probably in the target language already); function words of the target language
making up much of the input (the commonest mistake: typing the sentence one wants to see). Apart from these, the
model's own confidence (the geometric-mean probability of its output tokens) speaks of the translation, not of the
input: correct Spanish the model handles badly ("De nada") is not the learner's fault, and a confident model can
still be fed English. How often a model is wrong when it is unsure is its own figure, measured on its dev split
(``Doubt``), said in one note with the text far from what it learned and an output repeating itself (``unsure``).
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import sacrebleu

from data.languages import name_of
from data.readers import CorpusError, Pair
from lab.attention.translate_with_maps import TextTranslation
from lab.page import unfamiliar
from lab.page.direction import Languages
from model.bounded_read import read_json
from model.run_dir import DOUBT_FILE
from training.prepare import model_split
from translate.name_guard import NameGuard
from translate.source_language import is_source_language, looks_like
from translate.translator import DecodeOptions, Translation, Translator

MAX_UNKNOWN_SHARE = 0.25  # of the letters left out, or of the pieces <unk>: mostly characters never seen in training
COPY_RATIO = 0.9  # translation ≈ input (difflib ratio, case-folded): nothing was translated
MIN_COPY_WORDS = 2  # a one-word input such as a name is often rightly left as it is
# Geometric-mean p per output token under which the page says the model is unsure, unless the model's own
# measurement (DOUBT_FILE) names another. Chosen on the shipped Spanish → English model's dev split, written and
# typed (python -m workshop bench uncertainty; 4,000 translations, "wrong" = sentence chrF under 40): below 0.6,
# 50 % are wrong (precision) and 24 % of the wrong ones are flagged (recall); 0.5 flagged 8 %.
MIN_TOKEN_PROB = 0.6
WRONG_BELOW = 40.0  # sentence chrF under which a dev translation counts as wrong
DOUBT_SENTENCES = 200  # dev sentences a model without a measurement is measured on, once, when it is first unsure
# Function words of a target language that are no words of the other (English "he", "me", "no", "a" are Spanish
# words, Spanish "son", "no", "me" English ones): an input made of them is probably in the target language already.
FUNCTION_WORDS = {
    code: frozenset(words.split())
    for code, words in {
        "en": (
            "the is are was were am my your his her its our their where what who how why which this that these those "
            "of and to it it's i i'm you you're we they have has had do does don't did with for on at be can will would "
            "should there here from"
        ),
        "es": (
            "el la los las es está están eres soy estoy que qué de del y en un una unos unas por para mi mis tu tus su "
            "sus yo él ella ellos nosotros dónde cómo cuándo muy pero al lo se tengo hay también gracias"
        ),
    }.items()
}
MIN_TARGET_SHARE = 0.3  # of the input's words, function words of the target language


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
    language: str = ""  # langid's code for the input when it is not taken for the source language ("": it is)

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


def evidence(result: TextTranslation, unk_id: int, eos_id: int, guard: NameGuard | None = None) -> Evidence:
    """The best hypothesis of every piece of ``result``, summed, and the language of its source when the words of
    ``guard``'s corpus and langid say it is not the model's (``is_source_language``)."""
    other = not is_source_language(result.source, guard)
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
        language=looks_like(result.source)[0] if other else "",
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
    target = sum(w in FUNCTION_WORDS.get(langs.tgt_code, ()) for w in words)
    if e.language:
        name = name_of(e.language)
        said = name if name != e.language else f"another language (langid's guess: '{e.language}')"
        out.append(
            f"The input looks like {said}, not {langs.src}: most of its words are none of the model's corpus. "
            f"{expects}; the output is not a translation."
        )
    elif len(words) >= MIN_COPY_WORDS and target / len(words) >= MIN_TARGET_SHARE:
        out.append(
            f"The input looks like {langs.tgt} ({target} of its {len(words)} words are {langs.tgt} function words), "
            f"the language this model translates into. {expects}."
        )
    if len(e.text.split()) >= MIN_COPY_WORDS and e.copy_ratio >= COPY_RATIO:
        out.append(f"The output repeats the input almost unchanged: the input may already be {langs.tgt}. {expects}.")
    return out


def floored(p: float) -> str:
    """``p`` to two decimals, rounded down: a probability just under a threshold never prints as the threshold
    ("0.60, below 0.60")."""
    return f"{math.floor(round(p * 100, 6)) / 100:.2f}"


def ceiled(p: float) -> str:
    """``p`` to two decimals, rounded up: a threshold prints above every ``floored`` probability under it."""
    return f"{math.ceil(round(p * 100, 6)) / 100:.2f}"


def unsure(e: Evidence, langs: Languages, doubt: Doubt | None = None, far: unfamiliar.Reading | None = None) -> str:
    """The one note on a translation to read with care ("" when none), each sign with its figure from ``doubt``: the
    model unsure of it, the text far from what it learned (``far``: lab/page/unfamiliar.py), an output repeating
    itself. Never when a language check fails: then the input is what to fix."""
    doubt, repeated = doubt or Doubt(), unfamiliar.loop(e.translation)
    if warnings(e, langs):
        return ""
    said = [unfamiliar.far_note(far, doubt.far) if far else ""]
    if e.token_prob < doubt.threshold:
        how_often = (
            f"how often this model is wrong when it scores that low is not known: {doubt.unmeasured}"
            if doubt.precision is None
            else f"about {doubt.precision:.0%} of this model's dev translations that score that low are wrong "
            f"({doubt.measured})"
        )
        said.insert(
            0,
            "The model is unsure of this translation: the geometric mean of its output tokens' probabilities (exp of "
            f"the mean log-probability) is {floored(e.token_prob)}, below {ceiled(doubt.threshold)}; {how_often}. "
            f"The input passed the checks for {langs.src}, so the doubt is the model's: the translation may be wrong.",
        )
    if repeated:
        said.append(
            f"The translation says “{repeated}” three or more times in a row: the decoder lost its place (each step "
            "reads the words before it, and a repeated word makes the next repeat likelier)."
        )
    return " ".join(line for line in said if line)


# --- how often the model is wrong when it is unsure, on its own dev split ---


@dataclass(frozen=True)
class Doubt:
    """One model's figures for its note (``unsure``): its threshold and, when measured, the share of its dev
    translations below it that are wrong; and how its far-from-training sign does (lab/page/unfamiliar.py)."""

    threshold: float = MIN_TOKEN_PROB
    precision: float | None = None  # None: not measured (or no dev translation scored below the threshold)
    measured: str = ""  # on what: "measured on 4,000 dev translations, written and typed, 498 of them below 0.60"
    unmeasured: str = "it has no dev split to measure it on"
    far: unfamiliar.FarFigures | None = None  # how the far-from-training sign does on this model

    def to_json(self) -> str:
        far = vars(self.far) if self.far else None
        return json.dumps(
            {"threshold": self.threshold, "precision": self.precision, "measured": self.measured, "far": far}
        )


def doubt_of(probs: list[float], wrong: list[bool], measured: str, threshold: float = MIN_TOKEN_PROB) -> Doubt:
    """The doubt figures of a model from its dev translations' probabilities per token and which are wrong."""
    below = [w for p, w in zip(probs, wrong, strict=True) if p < threshold]
    if not below:
        return Doubt(threshold, None, measured, f"none of its {measured} scored below {threshold:.2f}")
    return Doubt(
        threshold, sum(below) / len(below), f"measured on {measured}, {len(below):,} of them below {threshold:.2f}"
    )


def token_prob(translation: Translation) -> float:
    """Geometric-mean probability per output token of the best hypothesis."""
    best = translation.best
    return math.exp(best.log_prob / max(1, len(best.tokens)))


def measure_doubt(translator: Translator, pairs: list[Pair], measured: str) -> Doubt:
    """Translate ``pairs`` (the model's dev pairs; greedy) and measure the share of wrong ones below the threshold."""
    chrf = sacrebleu.metrics.CHRF()
    results = translator.translate_all([p.src for p in pairs], DecodeOptions(), batch_size=32)
    probs = [token_prob(t) for t in results]
    wrong = [chrf.sentence_score(t.text, [p.tgt]).score < WRONG_BELOW for t, p in zip(results, pairs, strict=True)]
    return doubt_of(probs, wrong, measured)


def model_doubt(model_dir: Path, translator: Translator) -> Doubt:
    """The model's own doubt figures: its DOUBT_FILE (``python -m workshop bench uncertainty --write``), else
    measured now on the first DOUBT_SENTENCES of its dev split (``model_split``: its run's ``splits/``, or the pairs
    its ``split.json`` names, read back from its corpus), else unmeasured and why."""
    try:
        data = read_json(model_dir / DOUBT_FILE, ValueError)
        threshold, precision, measured = float(data["threshold"]), data["precision"], str(data["measured"])
        far = unfamiliar.FarFigures(**data["far"]) if data.get("far") else None
        if precision is None:
            return Doubt(threshold, None, "", measured, far)
        return Doubt(threshold, float(precision), measured, far=far)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    try:
        dev = model_split(model_dir).dev[:DOUBT_SENTENCES]
    except (OSError, CorpusError) as err:
        return Doubt(unmeasured=f"its dev split cannot be read ({err})")
    return measure_doubt(translator, dev, f"{len(dev):,} dev translations") if dev else Doubt()
