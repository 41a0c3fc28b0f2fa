"""The behaviour tests: templates whose slots make pairs of Spanish sentences (one slot changed), and pure checks.

An *invariant* test changes what must not change the rest of the translation (a name, a number, the way it is
typed); a *directional* one changes what must change it in a known way (él → ella: "he" → "she"). The slot lists are
the lab's own, never the evaluation lists (data/everyday-*.tsv); cases are drawn with a stated seed.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations, product

from data.noise import drop_final_punctuation, drop_inverted_marks, strip_accents, typed

SEED = 52  # the draw of every test's cases
CASES = 60  # cases per test: 6 tests, at most 720 sentences to translate
INVARIANT, DIRECTIONAL = "invariant", "directional"


@dataclass(frozen=True)
class Case:
    """Two Spanish sentences that differ in one slot, and that slot in the English (empty when it has no word)."""

    original: str
    changed: str
    before: str = ""  # what the original's translation should hold: "Lucía", "12", "he", "book"
    after: str = ""  # what the changed one's should hold instead: "Elena", "40", "she", "books"


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""  # why it failed, in a few words ("" when it passed)


Check = Callable[[Case, tuple[str, str]], Verdict]  # (the two sources, their translations) -> pass or fail


# --- the slots -------------------------------------------------------------------------------------------------
FEMALE = ("Lucía", "Carmen", "Elena", "Marta", "Nuria", "Pilar", "Rocío", "Inés", "Beatriz", "Raquel", "Silvia")
FEMALE += ("Alba", "Irene", "Noelia", "Ainhoa", "Begoña", "Itziar", "Montse", "Teresa", "Yolanda", "Paloma")
FEMALE += ("Lorena", "Maite", "Almudena", "Esther", "Ángela", "Celia", "Remedios", "Consuelo", "Vanesa")
MALE = ("Javier", "Pablo", "Álvaro", "Sergio", "Diego", "Rubén", "Iñaki", "Jorge", "Alberto", "Raúl", "Andrés")
MALE += ("Héctor", "Ignacio", "Gonzalo", "Óscar", "Ramón", "Joaquín", "Emilio", "Fermín", "Xavier", "Borja")
MALE += ("Mikel", "Aitor", "Tomás", "Julián", "Marcos", "Esteban", "Rodrigo", "Hugo", "Unai")
NAMED = (  # {n}: a first name; nothing else in the sentence agrees with its gender
    "{n} compró un libro ayer.",
    "{n} vive cerca de la estación.",
    "Mañana voy a visitar a {n}.",
    "¿Has hablado con {n} esta semana?",
    "{n} toca el piano muy bien.",
    "Le di las llaves a {n}.",
    "{n} llega a las ocho.",
    "Mi vecino conoce a {n}.",
    "{n} trabaja en un hospital.",
    "Esta carta es para {n}.",
)
COUNTED = (  # {n}: a number from 2 to 999, written in digits
    "Compré {n} manzanas en el mercado.",
    "El tren sale en {n} minutos.",
    "Hay {n} alumnos en la clase.",
    "Leí {n} páginas anoche.",
    "La entrada cuesta {n} euros.",
    "Caminamos {n} kilómetros el domingo.",
    "El libro tiene {n} capítulos.",
    "Necesitamos {n} sillas para la fiesta.",
)
PRONOUN = (  # {P}/{p}: él or ella, capitalised or not; {a}: an adjective that agrees with it
    "{P} está {a}.",
    "Creo que {p} está {a}.",
    "Hoy {p} parece {a}.",
    "¿Por qué está {p} tan {a}?",
    "{P} dice que está {a}.",
    "Ayer {p} estaba muy {a}.",
)
ADJECTIVES = ("cansad", "content", "ocupad", "enferm", "preocupad", "enfadad", "nervios", "aburrid", "sorprendid")
ADJECTIVES += ("asustad", "tranquil")  # + o / a
PEOPLE = ("Mi hermano", "Mi vecina", "El profesor", "Nuestra hija", "Tu amigo", "La doctora")
DOINGS = ("come carne", "bebe café por la mañana", "habla francés", "sabe nadar", "conduce al trabajo")
DOINGS += ("lee el periódico", "vive en el centro", "juega al tenis los sábados", "quiere ir al cine")
DOINGS += ("entiende la pregunta", "lo sabe", "me llama los domingos", "se levanta temprano", "nos ayuda mucho")
TYPED_PEOPLE = ("Mi tía", "El médico", "Nuestro vecino", "La niña", "Mi compañero", "Tu abuela")
TYPED_DOINGS = ("está en el jardín", "perdió el autobús", "compró pan y leche", "vendrá después de la reunión")
TYPED_DOINGS += ("escribió una canción", "está aprendiendo inglés", "limpió la habitación", "llamó por teléfono")
TYPED_DOINGS += ("visitó el museo", "olvidó el paraguas")
TYPED_FORMS: dict[str, Callable[[str], str]] = {
    "lowercase": str.lower,
    "no accents": strip_accents,
    "no final punctuation": lambda text: drop_final_punctuation(drop_inverted_marks(text)),  # nor ¿¡
    "all three": typed,  # data/noise.py: lowercase, no accents, no ¿¡, no commas, no final punctuation
}
COUNTABLE = (  # Spanish one, Spanish many, English one, English many
    ("un libro", "libros", "book", "books"),
    ("un gato", "gatos", "cat", "cats"),
    ("un perro", "perros", "dog", "dogs"),
    ("una silla", "sillas", "chair", "chairs"),
    ("una manzana", "manzanas", "apple", "apples"),
    ("una llave", "llaves", "key", "keys"),
    ("un lápiz", "lápices", "pencil", "pencils"),
    ("una caja", "cajas", "box", "boxes"),
    ("una carta", "cartas", "letter", "letters"),
    ("un coche", "coches", "car", "cars"),
    ("una flor", "flores", "flower", "flowers"),
    ("una botella", "botellas", "bottle", "bottles"),
    ("una taza", "tazas", "cup", "cups"),
)
COUNTING = (  # {x}: one thing or two or three of them
    "Hay {x} en la mesa.",
    "Compré {x} ayer.",
    "Veo {x} desde la ventana.",
    "Necesito {x} para mañana.",
    "Mi padre tiene {x}.",
    "Encontramos {x} en el parque.",
)
NEGATION = re.compile(r"\b(?:not|never|no|nobody|nothing|none|neither|nor|cannot)\b|n['’]t\b", re.IGNORECASE)


# --- the cases -------------------------------------------------------------------------------------------------
def drawn(rng: random.Random, cases: list[Case], n: int) -> list[Case]:
    """``n`` of ``cases`` (those whose change changes the sentence), in a seeded random order."""
    changed = [c for c in dict.fromkeys(cases) if c.changed != c.original]
    return rng.sample(changed, n)  # ValueError when a test has fewer than n cases


def name_cases(rng: random.Random, n: int) -> list[Case]:
    swaps = [pair for names in (FEMALE, MALE) for pair in permutations(names, 2)]
    return drawn(rng, [Case(t.format(n=a), t.format(n=b), a, b) for t, (a, b) in product(NAMED, swaps)], n)


def number_cases(rng: random.Random, n: int) -> list[Case]:
    """Numbers of one or two digits as often as of three."""
    made = []
    for _ in range(4 * n):
        a, b = (str(rng.choice([rng.randint(2, 99), rng.randint(100, 999)])) for _ in range(2))
        t = rng.choice(COUNTED)
        made.append(Case(t.format(n=a), t.format(n=b), a, b))
    return drawn(rng, made, n)


def pronoun_cases(rng: random.Random, n: int) -> list[Case]:
    def said(t: str, p: str, a: str) -> str:
        return t.format(P=p.capitalize(), p=p, a=a)

    pairs = product(PRONOUN, ADJECTIVES)
    return drawn(rng, [Case(said(t, "él", a + "o"), said(t, "ella", a + "a"), "he", "she") for t, a in pairs], n)


def negation_cases(rng: random.Random, n: int) -> list[Case]:
    return drawn(rng, [Case(f"{who} {does}.", f"{who} no {does}.") for who, does in product(PEOPLE, DOINGS)], n)


def typed_cases(rng: random.Random, n: int) -> list[Case]:
    """Statements in every typed form; questions only lowercase or unaccented (without "¿?" they read as statements)."""
    said = [f"{w} {d}." for w, d in product(TYPED_PEOPLE, TYPED_DOINGS)]
    made = [Case(s, form(s)) for s, form in product(said, TYPED_FORMS.values())]
    asked = [f"¿{w} {d}?" for w, d in product(TYPED_PEOPLE, TYPED_DOINGS)]
    made += [Case(q, TYPED_FORMS[form](q)) for q, form in product(asked, ("lowercase", "no accents"))]
    return drawn(rng, made, n)


def plural_cases(rng: random.Random, n: int) -> list[Case]:
    made = [
        Case(t.format(x=one), t.format(x=f"{count} {many}"), en_one, en_many)
        for t, (one, many, en_one, en_many), count in product(COUNTING, COUNTABLE, ("dos", "tres"))
    ]
    return drawn(rng, made, n)


# --- the checks ------------------------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """The words of an English text, lowercase and without accents: what "unchanged" compares."""
    return re.findall(r"\w+(?:['’]t\b)?|['’]\w+", strip_accents(text).lower())  # "he's" → he 's; "don't" whole


def masked(text: str, value: str) -> list[str]:
    """The words of ``text`` with each whole occurrence of ``value``'s words read as "·"."""
    found, wanted, out, i = words(text), words(value), [], 0
    while i < len(found):
        hit = bool(wanted) and found[i : i + len(wanted)] == wanted
        out.append("·" if hit else found[i])
        i += len(wanted) if hit else 1
    return out


def has_word(text: str, value: str) -> bool:
    """Whether ``value`` (one word or more) is in ``text`` as whole words, case and accents aside."""
    return "·" in masked(text, value)


def first_difference(a: list[str], b: list[str]) -> str:
    """The first place two word lists differ, as "'x' → 'y'", or "" when they are equal."""
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            return f"'{' '.join(a[i1:i2])}' → '{' '.join(b[j1:j2])}'"
    return ""


def same_apart_from_swap(case: Case, translations: tuple[str, str]) -> Verdict:
    """Invariant: each translation holds its own name or number, and with it masked the two are the same."""
    for value, text in zip((case.before, case.after), translations, strict=True):
        if not has_word(text, value):
            return Verdict(False, f"'{value}' is missing")
    changed = first_difference(masked(translations[0], case.before), masked(translations[1], case.after))
    return Verdict(not changed, changed and f"the rest changed: {changed}")


def same_up_to_form(case: Case, translations: tuple[str, str]) -> Verdict:
    """Invariant: the same words, case, accents and punctuation aside."""
    changed = first_difference(*(words(t) for t in translations))
    return Verdict(not changed, changed and f"differs beyond case and punctuation: {changed}")


def word_changes(case: Case, translations: tuple[str, str]) -> Verdict:
    """Directional: the original's translation says ``before`` and not ``after``, the changed one the reverse."""
    for which, text, wanted, unwanted in zip(
        ("original", "changed"), translations, (case.before, case.after), (case.after, case.before), strict=True
    ):
        if not has_word(text, wanted):
            return Verdict(False, f"no '{wanted}' in the {which} sentence's translation")
        if has_word(text, unwanted):
            return Verdict(False, f"'{unwanted}' in the {which} sentence's translation")
    return Verdict(True)


def negation_added(case: Case, translations: tuple[str, str]) -> Verdict:
    """Directional: a negation in the translation of the sentence with "no", none in the other's."""
    if NEGATION.search(translations[0]):
        return Verdict(False, "a negation already without 'no'")
    if not NEGATION.search(translations[1]):
        return Verdict(False, "no negation (not, n't, never, no…)")
    return Verdict(True)


@dataclass(frozen=True)
class BehaviourTest:
    name: str
    kind: str  # INVARIANT or DIRECTIONAL
    expects: str  # what the translation must do, in one sentence
    make: Callable[[random.Random, int], list[Case]]
    check: Check

    def cases(self, seed: int = SEED, n: int = CASES) -> list[Case]:
        """``n`` cases drawn with ``seed`` (the same seed, the same cases)."""
        return self.make(random.Random(f"{seed}:{self.name}"), n)


TESTS = (
    BehaviourTest(
        "name swap",
        INVARIANT,
        "Another first name of the same gender: the name is kept and the rest of the translation is unchanged.",
        name_cases,
        same_apart_from_swap,
    ),
    BehaviourTest(
        "number change",
        INVARIANT,
        "Another number (2 to 999): it appears in digits and the rest of the translation is unchanged.",
        number_cases,
        same_apart_from_swap,
    ),
    BehaviourTest(
        "pronoun flip",
        DIRECTIONAL,
        "Él becomes ella (the adjective agreeing): the translation's 'he' becomes 'she'.",
        pronoun_cases,
        word_changes,
    ),
    BehaviourTest(
        "typed form",
        INVARIANT,
        "Lowercase, no accents or (a statement) no final punctuation, or all three: the same translation up to case "
        "and punctuation.",
        typed_cases,
        same_up_to_form,
    ),
    BehaviourTest(
        "negation",
        DIRECTIONAL,
        "'No' before the verb: a negation (not, n't, never, no) appears, where there was none.",
        negation_cases,
        negation_added,
    ),
    BehaviourTest(
        "plural",
        DIRECTIONAL,
        "'Un libro' becomes 'dos libros': the English noun turns plural ('book' → 'books').",
        plural_cases,
        word_changes,
    ),
)
