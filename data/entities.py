"""Names, places and numbers swapped on both sides of a pair, so that the model learns to copy what it has never seen.

Tatoeba's people are Tom and Mary: 20,875 of its 122,162 English sides hold "Tom", and only a few hundred names or
places ever occur on both sides. A model trained on it learns that a person is called Tom, not that a name is
copied, and translates the pieces of an unseen one ("Me llamo Ana" → "My name is coming"). Each epoch, a share of
the pairs that hold the same name or number on both sides get it replaced, consistently on both sides, by one
drawn afresh: first and last names and cities of many locales (accents, ñ, several words), made-up name-shaped
words, and numbers of every length. The typing noise applied afterwards lowercases some of those sources, so the
model also sees "me llamo ana" → "My name is Ana".

An entity is found in the corpus, not hand-listed: a capitalised word spelled the same on both sides of a pair
whose lowercase form is rare in the corpus ("Tom" yes, "No" no), or a digit string on both sides.
"""

from __future__ import annotations

import random
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field, replace

from data.readers import Pair
from model.typed_config import ConfigError

TITLE_WORD = re.compile(r"\b[A-ZÁÉÍÓÚÑÜ][a-záéíóúñü]+\b")
DIGITS = re.compile(r"(?<![\d.,])\d+(?![\d])")
MAX_LOWER_SHARE = 0.05  # a capitalised word is a name when at most this share of its uses are lowercase
HELD_OUT_EVERY = 5  # one name in five (by a stable hash) is never drawn for training: the copy check's names
LOCALES = ("es_ES", "es_MX", "es_AR", "es_CO", "en_US", "en_GB", "fr_FR", "de_DE", "it_IT", "pt_BR")
CITIES_PER_LOCALE = 200
SYLLABLES = tuple(f"{c}{v}" for c in "bcdfgjklmnprstvyz" for v in "aeiou")
PLACE_NAME = re.compile(r"[A-ZÁÉÍÓÚÑ][\w.-]*(?: (?:de|del|la|los|las|[A-ZÁÉÍÓÚÑ][\w.-]*))*")  # "Ribnitz-Damgarten"
HE, SHE = frozenset(["he", "him", "his", "himself"]), frozenset(["she", "her", "hers", "herself"])
CODAS = ("", "", "", "n", "r", "s", "l", "th", "x")


@dataclass(frozen=True)
class EntityConfig:
    """``p``: share of the pairs holding a shared name or number that get it replaced each epoch (0 = off)."""

    p: float = 0.0
    pseudo: float = 0.15  # share of replacement names that are made-up, name-shaped letter strings
    full_name: float = 0.2  # share of replacement person names given as "first last"

    def __post_init__(self) -> None:
        for name in ("p", "pseudo", "full_name"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"data.entities.{name} must be a probability in [0, 1], got {value!r}")

    @property
    def enabled(self) -> bool:
        return self.p > 0


def held_out(name: str) -> bool:
    """Whether ``name`` belongs to the copy check's names (never drawn for training): a stable hash, not a list."""
    return zlib.crc32(name.encode()) % HELD_OUT_EVERY == 0


@dataclass(frozen=True)
class EntityPool:
    """What a replacement is drawn from: first names by gender, surnames, places (Faker's locales)."""

    male: tuple[str, ...]
    female: tuple[str, ...]
    surnames: tuple[str, ...]
    places: tuple[str, ...]

    @classmethod
    def build(cls, held: bool | None = False, seed: int = 0) -> EntityPool:
        """Training's pool (``held`` false), the copy check's (true; disjoint by ``held_out``) or both (None).
        Needs Faker, a training dependency only (the app never builds a pool)."""
        try:
            from faker import Faker
        except ImportError as err:
            raise ConfigError("data.entities needs Faker: pip install faker") from err
        male, female, surnames, places = set(), set(), set(), set()
        for locale in LOCALES:
            fake = Faker(locale)
            fake.seed_instance(seed)
            person = fake.provider("faker.providers.person")
            male.update(getattr(person, "first_names_male", ()))
            female.update(getattr(person, "first_names_female", ()))
            surnames.update(fake.last_name() for _ in range(CITIES_PER_LOCALE))
            listed = sorted(getattr(fake.provider("faker.providers.address"), "cities", ()))  # it_IT's: a set's order
            draw = random.Random(seed).sample(listed, min(len(listed), CITIES_PER_LOCALE)) if listed else None
            places.update(draw or (fake.city() for _ in range(CITIES_PER_LOCALE)))
        japanese = Faker("ja_JP")
        japanese.seed_instance(seed)  # romanised: "Kenji Shimizu"
        male.update(japanese.first_romanized_name_male() for _ in range(60))
        female.update(japanese.first_romanized_name_female() for _ in range(60))
        surnames.update(japanese.last_romanized_name() for _ in range(60))

        def keep(names: set[str]) -> tuple[str, ...]:
            return tuple(sorted(n for n in names if PLACE_NAME.fullmatch(n) and held in (None, held_out(n))))

        return cls(keep(male), keep(female), keep(surnames), keep(places))

    def person(self, gender: str, rng: random.Random, config: EntityConfig) -> str:
        """A first name of ``gender`` ("male", "female" or "any"), sometimes with a surname or made up."""
        if rng.random() < config.pseudo:
            name = pseudo_word(rng)
        else:
            names = {"male": self.male, "female": self.female}.get(gender, self.male + self.female)
            name = rng.choice(names)
        return f"{name} {rng.choice(self.surnames)}" if rng.random() < config.full_name else name

    def other(self, rng: random.Random, config: EntityConfig) -> str:
        """A place, a surname, or a made-up word: for an entity that is not a known first name."""
        if rng.random() < config.pseudo:
            return pseudo_word(rng)
        return rng.choice(self.places if rng.random() < 0.7 else self.surnames)


def pseudo_word(rng: random.Random) -> str:
    """A capitalised letter string shaped like a name ("Belumar"): nothing the corpus or the vocabulary holds."""
    return ("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))) + rng.choice(CODAS)).capitalize()


def random_number(original: str, rng: random.Random) -> str:
    """A number to put where ``original`` was: a year for a year, otherwise 1 to 7 digits."""
    if len(original) == 4 and original[:2] in ("19", "20") and rng.random() < 0.7:
        return str(rng.randint(1900, 2035))
    digits = rng.choice((1, 1, 2, 2, 3, 4, 5, 6, 7))
    return str(rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1))


@dataclass(frozen=True)
class EntityFinder:
    """The corpus's names (capitalised words rarely used lowercase), each a person of a gender or something else."""

    names: frozenset[str]
    # name -> "male", "female" (the English around it says he or she, or a first-name list does) or "any" (a first
    # name of either); a name not here is a place, a surname or a thing, and gets one of those
    people: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: list[Pair], pool: EntityPool, english_source: bool = False) -> EntityFinder:
        """Found in ``pairs``: which capitalised words are names, and which names are people (``pool``'s lists;
        a name's gender from the English side's pronouns: the target, or the source with ``english_source``)."""
        capitalised, lowercase, he, she = Counter(), Counter(), Counter(), Counter()
        shared = set()
        for pair in pairs:
            for side in (pair.src, pair.tgt):
                for word in re.findall(r"\w+", side):
                    (capitalised if word[:1].isupper() else lowercase)[word] += 1
            both = set(TITLE_WORD.findall(pair.src)) & set(TITLE_WORD.findall(pair.tgt))
            inner = {m.group() for side in (pair.src, pair.tgt) for m in TITLE_WORD.finditer(side) if m.start() > 2}
            shared |= both & inner  # capitalised after a sentence's start somewhere: "Oh" and "No" never are
            words = set((pair.src if english_source else pair.tgt).lower().split())
            for name in both:
                he[name] += bool(words & HE)
                she[name] += bool(words & SHE)
        names = frozenset(
            w for w in shared if lowercase[w.lower()] <= MAX_LOWER_SHARE * (capitalised[w] + lowercase[w.lower()])
        )
        male, female = set(pool.male), set(pool.female)
        people = {}
        for name in names:
            if he[name] + she[name] >= 3 and max(he[name], she[name]) >= 3 * min(he[name], she[name]):
                people[name] = "male" if he[name] > she[name] else "female"
            elif name in male or name in female:
                people[name] = "male" if name not in female else "female" if name not in male else "any"
        return cls(names, people)

    def shared(self, pair: Pair) -> list[str]:
        """The names and digit strings that ``pair`` holds on both sides, in source order."""
        words = [w for w in TITLE_WORD.findall(pair.src) if w in self.names and re.search(rf"\b{w}\b", pair.tgt)]
        numbers = [n for n in DIGITS.findall(pair.src) if re.search(rf"(?<![\d.,]){n}(?!\d)", pair.tgt)]
        return list(dict.fromkeys(words + numbers))


def substitute(
    pair: Pair, finder: EntityFinder, pool: EntityPool, rng: random.Random, config: EntityConfig
) -> tuple[Pair, int]:
    """``pair`` with each shared entity replaced (all of them, or none: drawn with ``config.p``), and how many."""
    found = finder.shared(pair)
    if not found or rng.random() >= config.p:
        return pair, 0
    return swap_all(pair, found, finder, pool, rng, config)[0], len(found)


def swap_all(
    pair: Pair, found: list[str], finder: EntityFinder, pool: EntityPool, rng: random.Random, config: EntityConfig
) -> tuple[Pair, list[str]]:
    """``pair`` with each of ``found`` replaced by a new draw of its kind (number, person, other), and the draws."""
    drawn = []
    for old in found:
        if old.isdigit():
            new = random_number(old, rng)
        elif old in finder.people:
            new = pool.person(finder.people[old], rng, config)
        else:
            new = pool.other(rng, config)
        whole = re.compile(rf"(?<![\d.,]){old}(?!\d)" if old.isdigit() else rf"\b{old}\b")  # every whole-word ``old``
        pair = replace(pair, src=whole.sub(new, pair.src), tgt=whole.sub(new, pair.tgt))
        drawn.append(new)
    return pair, drawn
