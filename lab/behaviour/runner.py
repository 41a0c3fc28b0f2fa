"""Running the behaviour tests on a model: every test's sentences translated once (greedy, in batches), then each
case checked on the system's translations (the model under its name guard) and on the model's alone. The cases the
guard decides by reading both sentences alike ("Alberto/Esteban toca el piano." both read as "Tom toca el piano.")
are counted apart: the system passes those by construction.
The work is bounded by the suite: ``len(TESTS) × CASES × 2`` sentences at most, 3–6 s on one CPU thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.attention.translate_with_maps import without_guard
from lab.behaviour.cases import CASES, SEED, TESTS, BehaviourTest, Case, Verdict
from translate.translator import DecodeOptions, Translator

BATCH = 64  # sentences decoded at once; the progress bar moves once per batch


@dataclass(frozen=True)
class Reading:
    """One sentence's English from the system (model + guard) and from the model alone, and what the guard read."""

    system: str
    alone: str
    read_as: str = ""  # the sentence the model read under the guard ("": as typed)


Translate = Callable[[list[str]], list[Reading]]  # Spanish sentences -> their readings, in order


@dataclass(frozen=True)
class Outcome:
    case: Case
    translations: tuple[str, str]  # the system's, of case.original, case.changed
    verdict: Verdict  # the system's
    alone: tuple[str, str]  # the model alone's
    alone_verdict: Verdict
    read_alike: bool  # the guard read both sentences as one stand-in sentence: the system passes by construction


@dataclass(frozen=True)
class TestResult:
    test: BehaviourTest
    outcomes: tuple[Outcome, ...]

    @property
    def passed(self) -> int:  # by the system
        return sum(o.verdict.passed for o in self.outcomes)

    @property
    def passed_alone(self) -> int:
        return sum(o.alone_verdict.passed for o in self.outcomes)

    @property
    def read_alike(self) -> int:
        return sum(o.read_alike for o in self.outcomes)

    @property
    def passed_read_apart(self) -> int:
        """Cases the system passes among those the guard did not read alike: what the model itself had to do."""
        return sum(o.verdict.passed and not o.read_alike for o in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        """Cases the system or the model alone fails."""
        return [o for o in self.outcomes if not (o.verdict.passed and o.alone_verdict.passed)]


def model_translate(translator: Translator) -> Translate:
    """The model's greedy translations under its name guard and alone (a sentence the guard left alone, once)."""

    def translate(texts: list[str]) -> list[Reading]:
        system = translator.translate_all(texts, DecodeOptions(), batch_size=BATCH)
        alone = without_guard(translator, texts, system, DecodeOptions(), BATCH)
        read_as = [s.guarded.read_as if s.guarded is not None else "" for s in system]
        return [Reading(s.text, a.text, r) for s, a, r in zip(system, alone, read_as, strict=True)]

    return translate


def run(
    translate: Translate,
    tests: tuple[BehaviourTest, ...] = TESTS,
    seed: int = SEED,
    cases: int = CASES,
    progress: Callable[[int, int], None] | None = None,
) -> list[TestResult]:
    """Each test's ``cases`` cases drawn with ``seed``, every distinct sentence translated once (shortest first,
    ``BATCH`` at a time; ``progress(done, total)`` after each batch), and each case checked."""
    drawn = [(test, test.cases(seed, cases)) for test in tests]
    texts = sorted(dict.fromkeys(s for _, made in drawn for c in made for s in (c.original, c.changed)), key=len)
    english: dict[str, Reading] = {}
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        english.update(zip(chunk, translate(chunk), strict=True))
        if progress is not None:
            progress(len(english), len(texts))
    return [
        TestResult(test, tuple(outcome(test, c, english[c.original], english[c.changed]) for c in made))
        for test, made in drawn
    ]


def outcome(test: BehaviourTest, case: Case, original: Reading, changed: Reading) -> Outcome:
    """``case`` checked on the system's translations and on the model alone's."""
    system, alone = (original.system, changed.system), (original.alone, changed.alone)
    alike = bool(original.read_as) and original.read_as == changed.read_as
    return Outcome(case, system, test.check(case, system), alone, test.check(case, alone), alike)
