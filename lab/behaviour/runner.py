"""Running the behaviour tests on a model: every test's sentences translated once, in batches (greedy), then each
case checked; a pass rate per test and its failing cases.

The work is bounded by the suite, not by the user: ``len(TESTS) × CASES × 2`` sentences at most (720, fewer where
tests share one): 3–6 s on one CPU thread with the shipped model (docs/views.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from lab.behaviour.cases import CASES, SEED, TESTS, BehaviourTest, Case, Verdict
from translate.translator import DecodeOptions, Translator

BATCH = 64  # sentences decoded at once; the progress bar moves once per batch

Translate = Callable[[list[str]], list[str]]  # Spanish sentences -> their English, in order


@dataclass(frozen=True)
class Outcome:
    case: Case
    translations: tuple[str, str]  # of case.original, case.changed
    verdict: Verdict


@dataclass(frozen=True)
class TestResult:
    test: BehaviourTest
    outcomes: tuple[Outcome, ...]

    @property
    def passed(self) -> int:
        return sum(o.verdict.passed for o in self.outcomes)

    @property
    def rate(self) -> float:
        return self.passed / len(self.outcomes) if self.outcomes else 0.0

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.verdict.passed]


def model_translate(translator: Translator, name_guard: bool = True) -> Translate:
    """The model's greedy translations, under its name guard when it has one and ``name_guard`` asks."""
    return partial(translator.translate_many, options=DecodeOptions(name_guard=name_guard), batch_size=BATCH)


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
    english: dict[str, str] = {}
    for start in range(0, len(texts), BATCH):
        chunk = texts[start : start + BATCH]
        english.update(zip(chunk, translate(chunk), strict=True))
        if progress is not None:
            progress(len(english), len(texts))
    results = []
    for test, made in drawn:
        pairs = [(english[c.original], english[c.changed]) for c in made]
        outcomes = tuple(Outcome(c, pair, test.check(c, pair)) for c, pair in zip(made, pairs, strict=True))
        results.append(TestResult(test, outcomes))
    return results
