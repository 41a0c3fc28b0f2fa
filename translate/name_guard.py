"""The name guard: names, places and numbers the model cannot know are swapped for stand-ins it copies, then put back.

A small model trained on Tatoeba met a few hundred names, nearly all of them Tom and Mary: it copies those and
translates the pieces of any other ("Me llamo Ana" → "My name is coming"). Production systems do not leave this to
luck: they mask entities with placeholders and restore them after decoding (Luong et al. 2015; Post et al. 2019).
This model's placeholders are the corpus's own stand-ins. ``protect`` finds in the source

- a capitalised word after the sentence's start that the corpus rarely writes in lowercase ("Ana", "Sevilla"; a
  lowercase word in a text with capitals only after a cue);
- at the start or typed in lowercase, a word the corpus holds as a name, or a first name or place of the lists
  (Faker's locales, MIT licence; the copy check's held-out names excluded) that is rare as an ordinary word, or a
  word the corpus has never seen, nor any word sharing most of its letters ("beatriz" yes, "escribiéramos" no), typed
  nor its stem, unless after an article, a clitic or a noun ("piensa gumersindo"; not "un bozal", "pelo canoso");
- a word a cue announces as a name though the corpus uses it ("me llamo clara", "Esperanza y yo"), or a clitic after
  it, a word no sentence of the corpus begins with ("Nino se está…", "a nino le…");
- runs of them ("José Luis Ortiz", "Santa Cruz de Tenerife", "buenos aires"), but not a listed place written as
  words the model translates ("La victoria fue…"); digit strings, times, prices, phone numbers and codes
  ("AB1234", "91 234 56 78", "07:05"); dates ("3 de mayo de 1987"),

and reads each as a stand-in of its kind (Tom or John, Mary or Alice, Boston…; all distinct in a sentence): a
person's gender from the lists, else the words near the name that agree with it ("está cansada", "la doctora") against
its ending's ("Teresa", "Xoán"); a time as a time the corpus holds (2:30); a date as one the model has read ("30 de
octubre de 2013"), its month read as the corpus's best-known one when it is rare and put back by name ("May"); a
number with thousands or decimal signs put back with the target's ("2.000" → "2,000", as the corpus pairs them). A name
the corpus holds often (Boston, Monday) is left to the model, and so is text in another language than its source
(the translator asks translate/source_language.py). The text is read NFC-normalised, and a word keeps its
combining accents and invisible format characters ("An\u200ba"): a swap takes whole words. ``restore`` reads the
output once for every stand-in as a whole token and puts each original back (nothing put back is read again); a
stand-in missing, repeated or invented there (one of the guard's, not used in this sentence) means the guard gives up
and the caller translates the sentence unguarded. The lists and counts are computed once from a model's training pairs
(``build``) and kept beside its weights in ``name_guard.json`` (checked on load, translate/guard_file.py): a model
without the file has no guard.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from data.entities import EntityFinder, EntityPool
from model.bounded_read import read_json
from model.weights import ModelLoadError, write_beside
from translate.guard_file import MAX_GUARD_BYTES, check_guard

MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"  # combining accents NFC left apart
FORMAT = (  # Unicode's format characters (Cf), invisible: "An\u200ba", a direction mark
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
LETTERS = rf"[^\W\d_](?:[^\W\d_]|[{MARKS}]|[{FORMAT}]+(?=[^\W\d_]))*"  # a word's letters, its marks and joiners
# a token holding a digit ("07:05", "3,50", "AB1234"; never a final stop), or a word ("don't", "Karl-Jürgen")
WORD = re.compile(rf"[^\W_]*\d(?:\w|[:.,/-](?=\w))*|{LETTERS}(?:['’-]{LETTERS})*")
CONNECTORS = frozenset(  # inside "Santa Cruz de Tenerife", "Boulogne-sur-Mer"
    ["de", "del", "la", "las", "los", "da", "di", "do", "dos", "van", "von", "le", "du", "of", "sur"]
)
KINDS = ("male", "female", "place", "number")
PAIRING = frozenset(["y", "e", "o", "ni", "and", "or", "nor"])  # "Ana y Pedro": a word after a name and "y"
PERSONS = frozenset(["yo", "tú", "él", "ella", "usted", "i", "you", "he", "she"])  # "Esperanza y yo": a person
# A person's gender in the sentence: these words, and a Spanish word whose other ending the corpus uses ("cansada")
PRONOUNS = {"ella": 1, "ellas": 1, "she": 1, "her": 1, "he": -1, "him": -1, "his": -1}  # +1 feminine, -1 masculine
ARTICLES = {"la": 1, "una": 1, "las": 1, "el": -1, "un": -1, "los": -1, "lo": 0}  # before a name: "la doctora Quispe"
AGREEMENT = (("a", "o"), ("as", "os"))  # feminine and masculine endings
NEAR = 4  # words either side of a name that may agree with it
AGREEING = 3.0  # a word agreeing with a name against the log-odds of its form ("Rocío está cansada")
PAIRED_SHARE = 0.1  # a word agrees when its other ending is this common beside it (not "pregunta": "pregunto")
FEMALE_MARGIN = 2.0  # log-odds a woman's stand-in needs: the model copies Tom more surely than Mary
MONTHS = {  # a date's month the corpus rarely uses is read as its best-known one, and put back by name
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "en": "January February March April May June July August September October November December",
}
PREVERBAL = {"es": frozenset(["no", "se", "le", "les", "me", "te", "nos", "ya", "nunca"])}  # before a verb: "Nino se"
PLACE_PREPOSITIONS = frozenset(["en", "desde", "hasta", "in", "from", "to", "at"])
# Words after which a name may come: strongly ("me llamo", "a" before a person), or as often a word ("de", "and").
NAME_CUES = {
    "es": frozenset(["a", "llamo", "llamas", "llama", "llaman", "soy", "eres"]),
    "en": frozenset(["named", "called", "meet"]),
}
WEAK_CUES = {
    "es": frozenset(
        ["de", "para", "con", "y", "que", "por", "e", "o", "en", "desde", "hasta", "hacia", "sin", "entre"]
    ),
    "en": frozenset(["and", "with", "for", "of", "is", "am", "to"]),
}
KNOWN_NAME = 20  # a name the corpus writes capitalised this often is the model's own: left to it
KNOWN_NUMBER = 5  # a number (form) the corpus holds this often is copied by the model: left to it
KNOWN_TRANSLATION = 3  # a name the target side translates this often has a translation the model knows (Viena)
MAX_LOWER_SHARE = 0.05  # a capitalised word is a name when at most this share of its uses are lowercase
LISTED_ORDINARY = 20  # a listed name capitalised at a sentence's start: "Lucía" (18 uses of "lucía"), not "Rosa"
RARE_ORDINARY = 2  # a listed name or place used more often than this as an ordinary lowercase word is not guarded
TYPED_SURNAME = 10  # a word after a name typed in lowercase, used at most this often in lowercase, is its surname
SHAPE_MARGIN = 3.0  # log-odds a name-shaped word needs where no cue announces a name
STAND_INS_PER_KIND = 9
MIN_PAIRS = 1000  # training pairs a run needs for its preparation to write a guard (python -m training guard: any)
MIN_STAND_IN = 10  # a stand-in is a name or number both sides of at least this many training pairs share


def plain(word: str) -> str:
    """Lowercase, accents and apostrophes dropped: the form typed in a hurry ("Lucía" → "lucia", "don't" → "dont")."""
    decomposed = unicodedata.normalize("NFD", word.lower().replace("'", "").replace("’", ""))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch) and unicodedata.category(ch) != "Cf")


@dataclass(frozen=True)
class Swap:
    original: str  # as in the source ("Ana", "91 234 56 78")
    stand_in: str  # what the model read instead ("Mary")
    kind: str  # one of KINDS, or "month"
    out: str = ""  # the stand-in as the translation writes it, where not as read ("octubre" → "October")
    back: str = ""  # what goes back there ("May" for "mayo")
    kept: bool = False  # marked [[ ]] by the user: put back exactly as typed

    @property
    def written(self) -> str:
        """What the translation holds for the stand-in."""
        return self.out or self.stand_in


@dataclass(frozen=True)
class Guarded:
    """A source as the model reads it under the guard."""

    source: str  # as typed
    read_as: str  # with each swap's stand-in in place of its original
    swaps: tuple[Swap, ...]
    unused: tuple[str, ...] = ()  # the guard's stand-ins the output must not hold: not used, not explained

    def restore(self, output: str) -> tuple[str | None, str]:
        """``output`` with every stand-in back to its original, in one pass, and "" — or None and why it cannot be."""
        if not self.swaps:
            return output, ""
        back = self.originals
        pattern = whole_tokens(frozenset([*back, *self.unused]))
        found = Counter(m.group() for m in pattern.finditer(output))
        for swap in self.swaps:
            if (n := found[swap.written]) != 1:
                return None, f"{swap.stand_in} (read for {swap.original}) is {'missing' if not n else 'repeated'}"
        if invented := next((s for s in self.unused if found[s]), None):
            return None, f"{invented} is in the translation, though nothing was read as it"
        return pattern.sub(lambda m: back[m.group()], output), ""

    @functools.cached_property
    def originals(self) -> dict[str, str]:
        """Each stand-in's original as put back: a name typed in lowercase capitalised ("ana" → "Ana")."""
        return {
            s.written: s.back or (s.original if s.kind == "number" or s.kept else capitalised(s.original))
            for s in self.swaps
        }


class MarkError(ValueError):
    """A text whose [[ ]] marks do not pair."""


def unmarked(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without its [[ ]] marks ("keep this as typed") and the (start, end) in it of each marked span, its
    spaces trimmed; MarkError saying what was expected where the marks do not pair or hold nothing."""
    pieces, spans, opened, length, last = [], [], -1, 0, 0
    for m in re.finditer(r"\[\[|\]\]", text):
        pieces.append(text[last : m.start()])
        length, last, where = length + len(pieces[-1]), m.end(), f"{m.group()} at character {m.start() + 1}"
        if m.group() == "[[" and opened >= 0:
            raise MarkError(f"{where}: expected ]] to close the [[ before it first")
        if m.group() == "]]" and opened < 0:
            raise MarkError(f"{where}: expected a [[ before it")
        if m.group() == "]]":
            inside = "".join(pieces)[opened:]
            if not inside.strip():
                raise MarkError(f"{where}: expected words to keep between [[ and ]]")
            start = opened + len(inside) - len(inside.lstrip())
            spans.append((start, start + len(inside.strip())))
        opened, opened_at = (length, where) if m.group() == "[[" else (-1, "")
    if opened >= 0:
        raise MarkError(f"{opened_at}: expected ]] after the words to keep")
    return "".join(pieces) + text[last:], spans


def marked(text: str) -> list[str]:
    """The spans of ``text`` marked [[ ]], as typed."""
    plain_text, spans = unmarked(text)
    return [plain_text[a:b] for a, b in spans]


@functools.lru_cache(maxsize=256)  # a guard's sentences share a few sets: compiled once each
def whole_tokens(words: frozenset[str]) -> re.Pattern:
    """Any of ``words`` as a whole token, longest first: never inside a word, a name or a number ("30" is not in
    "10:30" nor in "7,30", "Mary" not in "O'Mary" nor in "Ana-Mary"; "Mary's" holds Mary, "30-year-old" 30)."""
    alternatives = "|".join(map(re.escape, sorted(words, key=lambda w: (-len(w), w))))
    inside = rf"[\w{MARKS}{FORMAT}]"
    return re.compile(rf"(?<!{inside})(?<!\w[:.,/'’-])(?:{alternatives})(?!{inside})(?![:.,/]\w)")


def number_stand_in(number: str, pool: list[str], attempt: int) -> str:
    """The stand-in for ``number``: of the pool's numbers closest in length (a year for a year, nearest first;
    three digits at most for any other), the ``attempt``-th."""
    year = re.fullmatch(r"1\d{3}|20\d{2}", number) is not None
    digits = 4 if year else min(3, sum(ch.isdigit() for ch in number))
    nearest = min(abs(len(n) - digits) for n in pool)  # once: the pool may be long
    closest = [n for n in pool if abs(len(n) - digits) == nearest]
    if year:  # 1987 as 2013, not 1939: a date the model has read
        closest.sort(key=lambda n: abs(int(n) - int(number)) if n.isdigit() else math.inf)
    return closest[attempt % len(closest)]


SEPARATED = {  # a number with the source language's thousands or decimal sign: "2.000", "3,5"; "2,000", "3.5"
    "es": re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+,\d+"),
    "en": re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+"),
}


def number_in_target(number: str, lang: str) -> str:
    """``number`` put back the target language's way when written with the source's signs ("2.000" → "2,000",
    "3,50" → "3.50" from Spanish, as the corpus's pairs write them); "" for any other ("07:05", "91 234 56 78")."""
    pattern = SEPARATED.get(lang)
    return number.translate(str.maketrans(".,", ",.")) if pattern and pattern.fullmatch(number) else ""


def number_shape(token: str) -> str:
    """A number's form with each digit run as 0: "18:45" and "2:30" are both "0:0", "IB3146" is "IB0"."""
    return re.sub(r"\d+", "0", token)


def _in_word(text: str, at: int, step: int) -> bool:
    """Whether a letter, digit or mark is at ``text[at]``, or beyond invisible format characters going ``step``: a
    span beside it would split a word, so it is not swapped."""
    while 0 <= at < len(text) and unicodedata.category(text[at]) == "Cf":
        at += step
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_" or unicodedata.category(text[at])[0] == "M")


def trigrams(key: str) -> list[str]:
    marked = f"^{key}$"
    return [marked[i : i + 3] for i in range(len(marked) - 2)]


def _spaced(text: str, a: re.Match, b: re.Match) -> bool:
    """Whether two tokens are separated by one space and nothing else."""
    return text[a.end() : b.start()] == " "


def capitalised(name: str) -> str:
    """ "josé luis" → "José Luis", "karl-jurgen" → "Karl-Jurgen", "santa cruz de tenerife" → "Santa Cruz de
    Tenerife"; a name written with capitals ("McKay", "Boulogne-sur-Mer") unchanged."""
    if not name.islower():
        return name
    return re.sub(
        LETTERS, lambda m: m.group() if m.group() in CONNECTORS else m.group()[:1].upper() + m.group()[1:], name
    )


@dataclass(frozen=True)
class NameGuard:
    """A model's guard: its corpus's word counts, the lists, and the stand-ins it copies."""

    lowercase: dict[str, int]  # plain word -> uses in lowercase on the source side of training
    capital: dict[str, int]  # plain word -> uses capitalised after a sentence's start
    initial: dict[str, int]  # plain word -> uses capitalised at a sentence's start (a name or not: unknown)
    translated: frozenset[str]  # capitalised words the target side mostly does not copy (Lisboa → Lisbon)
    accented: frozenset[str]  # plain words the corpus writes in lowercase with an accent or ñ ("nino": "niño")
    people: dict[str, str]  # plain first name -> "male" / "female" (the lists)
    places: frozenset[str]  # plain place names, multi-word ones too (the lists)
    stand_ins: dict[str, tuple[str, ...]]  # kind -> stand-ins, most copied first
    shape: dict[str, float]  # letter trigram -> log-odds of a name against an ordinary word (``name_shape``)
    lang: str = "es"  # the source language: which words announce a name (NAME_CUES)

    @functools.cached_property
    def _sorted(self) -> list[str]:
        """Every word the corpus holds, sorted: ``_inflection_of_known`` looks up its neighbours."""
        return sorted(set(self.lowercase) | set(self.capital) | set(self.initial))

    @functools.cached_property
    def _longest_place(self) -> int:
        return max((len(p.split()) for p in self.places), default=1)

    @functools.cached_property
    def _stand_in_words(self) -> set[str]:
        return {plain(s) for names in self.stand_ins.values() for s in names}

    @functools.cached_property
    def _number_forms(self) -> dict[str, list[str]]:
        """The corpus's own forms of each number shape, most used first: "18:45" is read as "2:30"."""
        forms = sorted(
            (n, w) for w, n in self.lowercase.items() if n >= MIN_STAND_IN and number_shape(w) not in ("0", w)
        )
        shaped: dict[str, list[str]] = {}
        for _, form in reversed(forms):
            shaped.setdefault(number_shape(form), []).append(form)
        return shaped

    @functools.cached_property
    def _month(self) -> str:
        """The month the corpus uses most, if it uses it often: a rare one is read as it."""
        months = MONTHS.get(self.lang, "").split()
        best = max(months, key=lambda m: self.lowercase.get(plain(m), 0), default="")
        return best if self.lowercase.get(plain(best), 0) >= KNOWN_NAME else ""

    @functools.cached_property
    def _female_shape(self) -> dict[str, float]:
        """A first name's form as a woman's against a man's: "-esa" a woman's."""
        women, men = ({k for k, g in self.people.items() if g == gender} for gender in ("female", "male"))
        return name_shapes(women, men)

    # --- what is a name -------------------------------------------------------------------------------------
    def _inflection_of_known(self, key: str) -> bool:
        """Whether a known word differs from ``key`` only in its last two letters or fewer ("bruces" for
        "bruce"): an unseen form of a seen word, not a name ("clemente" is not "clementina")."""
        at = bisect.bisect_left(self._sorted, key)
        for word in self._sorted[max(0, at - 1) : at + 1]:
            common = next(
                (i for i, (a, b) in enumerate(zip(key, word, strict=False)) if a != b), min(len(key), len(word))
            )
            if common >= 5 and len(key) - common <= 2 and len(word) - common <= 2:
                return True
        return False

    def _stem_known(self, key: str) -> bool:
        """Whether a known word is ``key`` with another ending of up to four letters ("aullando": "aullar")."""
        for stem in (key[:-n] for n in range(1, 5) if len(key) - n >= 4):
            at = bisect.bisect_left(self._sorted, stem)
            if any(w != key and w.startswith(stem) and len(w) <= len(stem) + 3 for w in self._sorted[at : at + 50]):
                return True
        return False

    def is_name(
        self,
        word: str,
        initial: bool,
        after: str = "",
        accents: bool = False,
        paired: bool = False,
        nxt: str = "",
        typed: bool = False,
    ) -> bool:
        """Whether ``word`` (at a sentence's start or not, after ``after`` and before ``nxt``, in a text written with
        ``accents`` or ``typed`` without capitals, ``paired`` by "y" with a name or "yo": "Esperanza y yo") is a name:
        the verdict of the first rule below that applies to what the corpus, the lists and its neighbours say of it."""
        key, cue, capitalised = plain(word), plain(after), word[:1].isupper()
        lower, capital, at_start = (d.get(key, 0) for d in (self.lowercase, self.capital, self.initial))
        if accents and key in self.accented and key == word.lower():  # "Nino se está…" is not "niño": unseen
            lower = capital = at_start = 0
        # What is known of the word, once: the corpus's counts of it, the lists, the word before it and after it
        own = key in self._stand_in_words or self.known_translation(key) or capital >= KNOWN_NAME or len(key) < 2
        listed = key in self.people or key in self.places  # a first name or a place of the lists
        rarely_lower = lower <= max(RARE_ORDINARY, MAX_LOWER_SHARE * (lower + capital))  # few of its uses lowercase
        rare = lower <= (LISTED_ORDINARY if initial and capitalised else RARE_ORDINARY)  # "Lucía va", not "Rosa es"
        strong, weak = cue in NAME_CUES.get(self.lang, ()), cue in WEAK_CUES.get(self.lang, ())  # "me llamo"; "de"
        announced, cued = paired or strong, paired or strong or weak  # "a beatriz", "geoffrey y gesa"; "de verdejo"
        named = (listed and lower < LISTED_ORDINARY) or (capitalised and at_start <= RARE_ORDINARY)  # not "a nada"
        pre = PREVERBAL.get(self.lang, frozenset())  # the words before a verb: "se", "le", "no"
        verb_next = plain(nxt) in pre and cue not in pre  # "Nino se está…", "a nino le…"; not "les escribí"
        subject = verb_next and at_start == capital == 0 and (initial or announced or not lower)
        corpus_name = capital > lower and rarely_lower and 4 * capital >= at_start  # not "Ojalá": 164 starts, 2 inside
        typed_name = not accents and word.islower() and capital >= max(1, lower) and 4 * capital >= at_start
        seen = lower + capital or at_start > 1 or len(key) < 3  # used, or two sentences begin with it; or too short
        # an unseen word's letters: > 0 like a name's ("shimizu", not "exprimiendo"); a known word's other ending?
        shape, inflected = (0.0, True) if seen else (self.name_shape(key), self._inflection_of_known(key))
        margin = -2 * SHAPE_MARGIN if announced else 0.0 if weak else SHAPE_MARGIN  # less where a name is announced
        plausible = shape > -2 * SHAPE_MARGIN  # letters not plainly a word's
        noun = cue in {*ARTICLES, *pre} or (not self.initial.get(cue) and self.lowercase.get(cue, 0) > RARE_ORDINARY)
        loose = typed and pre and not noun and not self._stem_known(key)  # "piensa gumersindo"; not "pelo canoso"
        rules = (  # (why, applies, is it a name): the first rule that applies decides
            ("the model's own: a stand-in, a name it copies or translates", own, False),  # "Tom", "Viena"
            ("a subject before a verb, never capitalised in the corpus", subject, True),
            ("announced by a cue: listed, or capitalised", announced and named, True),  # "me llamo lucia"
            ("in lowercase in a written text, uncued", word.islower() and not (cued or typed), False),  # "la pena"
            ("capitalised inside a sentence", capitalised and not initial, rarely_lower or strong or weak or listed),
            ("written as a name by the corpus", corpus_name, True),
            ("typed after a weak cue, capitalised in the corpus", weak and typed_name, True),  # "es de ecuador"
            ("listed, rare as an ordinary word", listed and rare, True),
            ("seen: a word the corpus uses", seen or (at_start and shape <= 0), False),  # or "Donald" at a start
            ("unseen, at the start", initial, not (inflected and shape <= 0) and (capitalised or plausible)),
            ("unseen, with accents", accents and not announced, shape > margin and not inflected),  # not "clínico"
            ("unseen, typed where a name may stand", loose and plausible, True),
            ("unseen, elsewhere", True, shape > margin or (cued and shape > -3 * SHAPE_MARGIN and not inflected)),
        )
        return next(verdict for _, applies, verdict in rules if applies)

    def known_translation(self, key: str) -> bool:
        """Whether the model has learned a translation for ``key`` as a name, written capitalised after a sentence's
        start ("Viena" → "Vienna"; not "Mira", a verb that begins sentences); a person's first name is kept as
        typed, even where the corpus gives it an English form ("Pablo", not "Paul")."""
        return key in self.translated and key not in self.people and self.capital.get(key, 0) > 0

    def translates_name(self, key: str) -> bool:
        """Whether ``key`` is a name the model translates itself, maybe into a stand-in ("María" → "Mary")."""
        capital = self.capital.get(key, 0)
        return key in self.translated and capital >= KNOWN_TRANSLATION and 4 * capital >= self.initial.get(key, 0)

    def name_shape(self, key: str) -> float:
        """Naive Bayes over letter trigrams: > 0 when ``key`` looks more like the lists' names than like the
        corpus's words (its endings say most: "-iendo", "-mente" are words; "-ine", "-zu" names)."""
        unknown = self.shape.get("", 0.0)
        return sum(self.shape.get(g, unknown) for g in trigrams(key))

    def kind(self, words: list[str], after: str, agreement: int) -> str:
        """A stand-in kind for a name of ``words``: a listed first name's gender, a listed place, a place by the
        word before it ("en Sevilla"; "de" before a name the corpus holds, not a person's: "es de Ecuador"); else a
        person of the gender the sentence agrees with (``agreement`` > 0: feminine), else of the name's form
        ("Teresa" a woman's, "Xoán" a man's)."""
        first = plain(words[0])
        if len(words) == 1 and first in self.people:
            return self.people[first]
        known = first not in self.people and self.capital.get(first, 0) > 0  # a name the corpus has, not a person's
        if (
            plain(" ".join(words)) in self.places
            or plain(after) in PLACE_PREPOSITIONS
            or (known and plain(after) == "de")
        ):
            return "place"  # "en Sevilla", "es de Ecuador"
        if first in self.people:
            return self.people[first]
        shape = self._female_shape
        form = sum(shape.get(g, shape[""]) for g in trigrams(first)[-2:])  # its ending: "-esa", "-io"
        return "female" if form + AGREEING * agreement > FEMALE_MARGIN else "male"

    def agreement(self, before: list[str], after: list[str]) -> int:
        """Feminine words less masculine ones, of those near a name: "ella", "she", an article before it ("la
        doctora Quispe"), and Spanish words the corpus uses with either ending ("cansada", "buena" against
        "cansado", "bueno", "tímida"; not "está", a verb accented on its end)."""
        votes = sum(ARTICLES.get(w.lower(), 0) for w in before)
        for word in before + after:
            key = plain(word)
            votes += PRONOUNS.get(key, 0)
            if self.lang != "es" or key in PRONOUNS or key in ARTICLES or plain(word[-2:]) != word[-2:].lower():
                continue
            for fem, masc in AGREEMENT:
                for end, other, sign in ((fem, masc, 1), (masc, fem, -1)):
                    stem = key[: -len(end)] if key.endswith(end) else ""
                    uses = sorted([self.lowercase.get(key, 0), self.lowercase.get(stem + other, 0)])
                    votes += sign if stem and uses[0] >= max(KNOWN_NUMBER, PAIRED_SHARE * uses[1]) else 0
        return votes

    # --- the guard ------------------------------------------------------------------------------------------
    def protect(self, text: str, attempt: int = 0, find: bool = True, marks: bool = False) -> Guarded:
        """``text`` (NFC-normalised) with each name, place and number read as a stand-in (``Guarded.swaps`` empty:
        nothing to do); a later ``attempt`` starts from each kind's next stand-in (the model drops "Tom" in "Mi
        hermano Tom"). With ``marks``, a span marked [[ ]] is read as a name's stand-in (a number's: digits), its
        marks removed, and put back as typed; ``find`` False: those alone."""
        typed, text = text, unicodedata.normalize("NFC", text)
        text, marks = unmarked(text) if marks else (text, [])
        digits = lambda a, b: any(c.isdigit() for c in text[a:b]) and not re.search(r"[^\W\d_]", text[a:b])  # noqa: E731
        kept = [(a, b, "kept number" if digits(a, b) else "kept male") for a, b in marks]
        found = [(a, b, k) for a, b, k in self._entities(text) if find and all(b <= x or a >= y for x, y in marks)]
        spans = sorted(kept + found)
        taken = {plain(w) for w in WORD.findall(text)}
        free = {k: [s for s in self.stand_ins.get(k, ()) if plain(s) not in taken] for k in KINDS}
        pools = {k: pool[attempt:] + pool[:attempt] if k != "number" else list(pool) for k, pool in free.items()}
        swaps, pieces, end = [], [], 0
        for start, stop, kind in spans:
            keep, kind = kind.startswith("kept "), kind.removeprefix("kept ")
            if kind == "month":
                swaps.append(self._month_swap(text[start:stop]))
                pieces += [text[end:start], swaps[-1].stand_in]
                end = stop
                continue
            pool = pools[kind] or (pools["male"] + pools["female"] + pools["place"] if kind != "number" else [])
            if not pool:
                continue  # this model has no stand-in left of that kind: the name stays as typed
            forms = [f for f in self._number_forms.get(number_shape(text[start:stop]), ()) if f not in taken]
            if kind == "number" and forms:  # a time as a time the corpus holds
                stand_in = forms[attempt % len(forms)]
            elif kind == "number":  # a year for a year, else a number of three digits or fewer: 30, 100
                stand_in = number_stand_in(text[start:stop], pool, attempt)
                pool.remove(stand_in)
            else:
                stand_in = pool.pop(0)
            for other in pools.values():
                if stand_in in other:
                    other.remove(stand_in)
            back = number_in_target(text[start:stop], self.lang) if kind == "number" and not keep else ""
            swaps.append(Swap(text[start:stop], stand_in, kind, back=back, kept=keep))
            pieces += [text[end:start], stand_in]
            end = stop
        left = " ".join([*pieces[::2], text[end:]])  # a name left to the model may come out as a stand-in: María → Mary
        translates = any(self.translates_name(plain(w)) for w in WORD.findall(left))
        used = {s.stand_in for s in swaps}
        unused = [s for k in KINDS for s in free[k] if s not in used and not (translates and k in ("male", "female"))]
        return Guarded(typed, "".join(pieces) + text[end:], tuple(swaps), tuple(dict.fromkeys(unused)))

    def _month_swap(self, month: str) -> Swap:
        """A rare month read as the corpus's best-known one, put back by its name in the other language."""
        target = MONTHS[next(lang for lang in MONTHS if lang != self.lang)].split()
        names = [plain(m) for m in MONTHS[self.lang].split()]
        return Swap(month, self._month, "month", target[names.index(self._month)], target[names.index(plain(month))])

    def _date(self, tokens: list[re.Match], i: int) -> list[tuple[int, int, str]]:
        """A date at ``tokens[i]`` ("3 de mayo de 1987"): its day and year read as stand-ins, its month when the
        corpus rarely uses it as its best-known one (``_month_swap``); empty where no date begins."""
        words = [t.group() for t in tokens[i : i + 5]]
        months = [plain(m) for m in MONTHS.get(self.lang, "").split()]
        if len(words) < 3 or not (words[0].isdigit() and int(words[0]) <= 31 and words[1] == "de"):
            return []
        if plain(words[2]) not in months:
            return []
        out = [(tokens[i].start(), tokens[i].end(), "number")]
        if self._month and self.lowercase.get(plain(words[2]), 0) < KNOWN_NAME:
            out.append((tokens[i + 2].start(), tokens[i + 2].end(), "month"))
        if words[3:4] == ["de"] and re.fullmatch(r"\d{3,4}", "".join(words[4:5])):
            out.append((tokens[i + 4].start(), tokens[i + 4].end(), "number"))
        return out

    def _entities(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of every name run and number in ``text``, in order."""
        tokens = list(WORD.finditer(text))
        accents = any(unicodedata.combining(c) for c in unicodedata.normalize("NFD", text))  # written
        out: list[tuple[int, int, str]] = []
        i = 0
        while i < len(tokens):
            match = tokens[i]
            if date := self._date(tokens, i):
                out += date
                i = next(k for k, t in enumerate(tokens) if t.end() == date[-1][1]) + 1
                continue
            if any(ch.isdigit() for ch in match.group()):
                j = i  # a phone number is digit groups separated by single spaces
                while (
                    j + 1 < len(tokens) and tokens[j + 1].group().isdigit() and _spaced(text, tokens[j], tokens[j + 1])
                ):
                    j += 1
                if j > i or self._unknown_number(match.group()):
                    out.append((match.start(), tokens[j].end(), "number"))
                i = j + 1
                continue
            j = self._place_at(tokens, i, text)
            paired = bool(out) and i >= 2 and out[-1][1] == tokens[i - 2].end() and tokens[i - 1].group() in PAIRING
            words = [t.group().lower() for t in tokens[i + 1 : i + 3]]
            paired = paired or (len(words) == 2 and words[0] in PAIRING and words[1] in PERSONS)  # "Ana y yo"
            if j < 0:
                j = self._name_run(tokens, i, text, accents, paired)
            if j < 0:
                i += 1
                continue
            if i and (not out or out[-1][1] <= tokens[i - 1].start()) and self._joins(tokens[i - 1], tokens[i], text):
                i -= 1  # "Juan Sutton", "Donald Bachmann": a name the model knows before one it does not
                match = tokens[i]
            words = [t.group() for t in tokens[i : j + 1]]
            after = tokens[i - 1].group() if i else ""
            near = [
                [t.group() for t in tokens[max(0, i - NEAR) : i]],
                [t.group() for t in tokens[j + 1 : j + 1 + NEAR]],
            ]
            out.append((match.start(), tokens[j].end(), self.kind(words, after, self.agreement(*near))))
            i = j + 1
        return [(a, b, kind) for a, b, kind in out if not _in_word(text, a - 1, -1) and not _in_word(text, b, 1)]

    def _unknown_number(self, token: str) -> bool:
        """Whether the model cannot be trusted to copy ``token``: a form its corpus holds fewer than KNOWN_NUMBER
        times, short ones too ("38" → "388th", "22" → "222" alone; "10", "2013", "5:00" are left to it)."""
        return self.lowercase.get(plain(token), 0) < KNOWN_NUMBER

    def _joins(self, before: re.Match, name: re.Match, text: str) -> bool:
        """Whether the capitalised word ``before`` a name is its first name: written as a name in the corpus."""
        word, key = before.group(), plain(before.group())
        typed = word.islower() and name.group().islower()  # "juan sutton"
        if not ((word[:1].isupper() or typed) and _spaced(text, before, name)) or key in self._stand_in_words:
            return False
        lower, named = self.lowercase.get(key, 0), self.capital.get(key, 0) + self.initial.get(key, 0)
        if typed and named == 0 and lower <= RARE_ORDINARY:  # two rare words in a row: "leander urena", "ori ruiz"
            return len(key) >= 3 and not self._inflection_of_known(key)
        if typed and not (key in self.people or 4 * self.capital.get(key, 0) >= self.initial.get(key, 0) > 0):
            return False  # "ojala ravi": "Ojalá" begins sentences, it is not a first name
        return lower <= max(RARE_ORDINARY, MAX_LOWER_SHARE * (lower + named)) and (named > 0 or key in self.people)

    def _place_at(self, tokens: list[re.Match], i: int, text: str) -> int:
        """The last token of a listed place of several words that starts at ``tokens[i]``, or -1: capitalised, or
        after "en", "in", "from"… ("vivo en buenos aires"; "una casa grande" is not Casa Grande), and not made of
        words the corpus uses, as it writes them ("La victoria fue…": the model translates it)."""
        after = plain(tokens[i - 1].group()) if i else ""
        if not (tokens[i].group()[:1].isupper() or after in PLACE_PREPOSITIONS):
            return -1
        for n in range(min(self._longest_place, len(tokens) - i), 1, -1):
            words = [t.group() for t in tokens[i : i + n]]
            if plain(text[tokens[i].start() : tokens[i + n - 1].end()]) in self.places and not self._words(words):
                return i + n - 1
        return -1

    def _words(self, run: list[str]) -> bool:
        """Whether each word of ``run`` after its first is one the corpus uses often, written as it writes it
        (lowercase): a phrase the model has a translation for, not a name."""
        return all(w.islower() and self.lowercase.get(plain(w), 0) > RARE_ORDINARY for w in run[1:])

    def _name_run(self, tokens: list[re.Match], i: int, text: str, accents: bool, paired: bool) -> int:
        """The last token of the name run that begins at ``tokens[i]`` (in a text written with ``accents``;
        ``paired``: "y" joins it to a name before it), or -1 when no name begins there."""

        def initial(k: int) -> bool:
            before = text[tokens[k - 1].end() : tokens[k].start()] if k else ""
            return k == 0 or any(ch in ".!?…" for ch in before)

        def capital(k: int) -> bool:  # capitalised after the start, not in capitals, not the model's own name
            word = tokens[k].group()
            key = plain(word)
            known = self.capital.get(key, 0) >= KNOWN_NAME or self.known_translation(key)
            return word[:1].isupper() and not word.isupper() and not initial(k) and not known

        two_capitals = i + 1 < len(tokens) and capital(i) and capital(i + 1) and _spaced(text, tokens[i], tokens[i + 1])
        before = lambda k: tokens[k - 1].group() if k else ""  # noqa: E731
        j, typed = i, not any(ch.isupper() for ch in text)  # written, a surname is capitalised: not "CIA realiza"
        nxt = tokens[i + 1].group() if i + 1 < len(tokens) else ""
        far = lambda k: self.is_name(tokens[k].group(), False, tokens[k - 1].group(), typed=True)  # noqa: E731
        if not (self.is_name(tokens[i].group(), initial(i), before(i), accents, paired, nxt, typed) or two_capitals):
            return -1
        while j + 1 < len(tokens) and _spaced(text, tokens[j], tokens[j + 1]):
            nxt, key = tokens[j + 1].group(), plain(tokens[j + 1].group())
            lower, first = self.lowercase.get(key, 0), key in self.people and plain(tokens[j].group()) in self.people
            surname = typed and ((len(key) >= 3 and lower <= TYPED_SURNAME) or (first and lower < LISTED_ORDINARY))
            named = nxt[:1].isupper() and not nxt.isupper() and not initial(j + 1)  # "Jérôme Juan": Juan too
            if key not in self._stand_in_words and (self.is_name(nxt, False, typed=typed) or named or surname):
                j += 1
            elif nxt.lower() in CONNECTORS and j + 2 < len(tokens) and (capital(j + 2) or (typed and far(j + 2))):
                j += 2
            else:
                break
        return j

    # --- kept beside the weights ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the guard to ``path`` whole: a new file renamed over it, never written through a link or into a FIFO."""
        data = {
            k: getattr(self, k) for k in ("lowercase", "capital", "initial", "people", "stand_ins", "shape", "lang")
        }
        data |= {k: sorted(getattr(self, k)) for k in ("translated", "accented", "places")}
        write_beside(Path(path), lambda f: f.write(json.dumps(data, ensure_ascii=False, sort_keys=True).encode()))

    @classmethod
    def load(cls, path: Path) -> NameGuard:
        """The guard in ``path``; one written before a field existed reads it as empty ("accented"). A file that
        is not a guard: ModelLoadError naming it, the field and how to write it again (translate/guard_file.py)."""
        d = read_json(Path(path), ModelLoadError, MAX_GUARD_BYTES)
        check_guard(d, path, KINDS)
        stand_ins = {k: tuple(v) for k, v in d["stand_ins"].items()}
        sets = (frozenset(d["translated"]), frozenset(d.get("accented", ())), d["people"], frozenset(d["places"]))
        return cls(d["lowercase"], d["capital"], d["initial"], *sets, stand_ins, d["shape"], d["lang"])


def source_counts(pairs: Iterable) -> tuple[Counter, Counter, Counter, frozenset[str], frozenset[str]]:
    """Of each plain word of the source side: uses in lowercase, capitalised after a sentence's start and at
    its start; the words mostly written capitalised, seen so at least KNOWN_TRANSLATION times, that the target side
    copies less than half the time (the model has learned a translation for them); and the words written in lowercase with an accent or
    ñ nearly always ("niño")."""
    lowercase, capital, initial, copied, accented = Counter(), Counter(), Counter(), Counter(), Counter()
    for pair in pairs:
        for k, match in enumerate(WORD.finditer(pair.src)):
            word = match.group()
            at_start = k == 0 or any(ch in ".!?…" for ch in pair.src[max(0, match.start() - 3) : match.start()])
            counts = lowercase if not word[:1].isupper() else initial if at_start else capital
            counts[plain(word)] += 1
            accented[plain(word)] += counts is lowercase and plain(word) != word.replace("'", "").replace("’", "")
            if word[:1].isupper():
                copied[plain(word)] += re.search(rf"(?<!\w){re.escape(word)}(?!\w)", pair.tgt) is not None
    named = capital + initial  # a word written capitalised more often than not, and not copied: "Viena" → "Vienna"
    translated = frozenset(
        w for w, n in named.items() if n >= KNOWN_TRANSLATION and 2 * copied[w] < n and lowercase[w] < n
    )
    return (
        lowercase,
        capital,
        initial,
        translated,
        frozenset(w for w, n in accented.items() if n and n >= 0.9 * lowercase[w]),
    )


def build(pairs: list, lang: str, pool: EntityPool | None = None, everyone: EntityPool | None = None) -> NameGuard:
    """A model's guard from its training pairs (``data.readers.Pair``): the source side's word counts, the name
    and place lists rare there as ordinary words, and as stand-ins the names and numbers most often shared by both
    sides (Tatoeba: Tom, John; Mary, Alice; Boston, Australia; 30, 100)."""
    pool = pool or EntityPool.build(held=False)  # the copy check's held-out names are never in the lists
    lowercase, capital, initial, translated, accented = source_counts(pairs)
    people = {plain(n): "female" for n in pool.female} | {plain(n): "male" for n in pool.male}
    places = frozenset(plain(p) for p in pool.places)
    every = everyone or EntityPool.build(held=None)  # who is a person, and of which gender: every first name
    finder = EntityFinder.from_pairs(pairs, every, english_source=lang == "en")
    shared = Counter(name for pair in pairs for name in finder.shared(pair))
    placed = Counter(
        m.group(1) for p in pairs for m in re.finditer(r"\b(?:in|to|from|at) ([A-Z]\w+)", p.tgt + " " + p.src)
    )
    stand_ins: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for name, n in shared.most_common():
        if name.isdigit():  # two to four digits, each length its own: 30, 100, 1939
            kind = "number" if 2 <= len(name) <= 4 and sum(len(x) == len(name) for x in stand_ins["number"]) < 3 else ""
        elif name in every.male or name in every.female:
            kind = finder.people.get(name, "male" if name in every.male else "female")
        else:  # a place when the English says "in Boston", "to Australia" at least half the time
            kind = "place" if 2 * placed[name] >= n else ""
        if n >= MIN_STAND_IN // (2 if kind == "number" else 1) and kind and len(stand_ins[kind]) < STAND_INS_PER_KIND:
            stand_ins[kind].append(name)
    stand_ins_found = {k: tuple(v) for k, v in stand_ins.items()}
    listed = {plain(w) for n in pool.male + pool.female + pool.surnames + pool.places for w in n.split()}
    ordinary = {w for w, n in lowercase.items() if n >= 2 and w.isalpha() and w not in listed}
    shape = name_shapes(listed, ordinary)
    counts = (dict(lowercase), dict(capital), dict(initial))
    return NameGuard(*counts, translated, accented, people, places, stand_ins_found, shape, lang)


def name_shapes(names: set[str], words: set[str]) -> dict[str, float]:
    """Each letter trigram's log-odds of a name against a word (add-one smoothing; "" for a trigram unseen)."""
    in_names, in_words = (Counter(g for w in group for g in trigrams(w)) for group in (names, words))
    vocabulary = len(in_names | in_words)
    n_total, w_total = sum(in_names.values()) + vocabulary, sum(in_words.values()) + vocabulary
    odds = lambda g: math.log((in_names[g] + 1) / n_total) - math.log((in_words[g] + 1) / w_total)  # noqa: E731
    return {g: round(odds(g), 2) for g in in_names | in_words} | {"": round(odds(""), 2)}
