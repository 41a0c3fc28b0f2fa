"""Behaviour tests (``lab/behaviour``): the cases are drawn repeatably and are many, each check passes a good pair
and fails a hand-made failure with its reason, the runner reports exactly a hand-made model failure, the system and
the model alone apart and the cases the guard read alike counted apart, and the tab (AppTest) opens a failing case in
the lab."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Dataframe

from lab.behaviour.cases import (
    DIRECTIONAL,
    INVARIANT,
    SEED,
    TESTS,
    Case,
    negation_added,
    same_apart_from_swap,
    same_up_to_form,
    word_changes,
)
from lab.behaviour.runner import BATCH, Reading, run
from workshop.checklist import HEAD, table

EVERYDAY = sorted((Path(__file__).resolve().parents[1] / "data").glob("everyday-*.tsv"))
BY_NAME = {t.name: t for t in TESTS}


def test_every_test_draws_at_least_50_distinct_cases_the_same_with_the_same_seed() -> None:
    assert len(TESTS) >= 6 and {t.kind for t in TESTS} == {INVARIANT, DIRECTIONAL}
    for test in TESTS:
        cases = test.cases()
        assert len(cases) >= 50 and len(set(cases)) == len(cases), test.name
        assert cases == test.cases(SEED), test.name  # the same seed, the same cases, in the same order
        assert all(c.changed != c.original for c in cases), test.name
        assert test.expects.endswith(".") and test.kind in (INVARIANT, DIRECTIONAL)
    assert any(t.cases(SEED + 1) != t.cases() for t in TESTS)  # the seed is what draws them


def test_no_case_is_a_sentence_of_the_evaluation_lists() -> None:
    listed = {
        line.split("\t")[0].strip().lower()
        for path in EVERYDAY
        for line in path.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    }
    assert EVERYDAY and listed
    made = {s.lower() for t in TESTS for c in t.cases() for s in (c.original, c.changed)}
    assert not made & listed


def test_a_swapped_name_or_number_must_be_kept_and_the_rest_unchanged() -> None:
    case = Case("Lucía compró un libro.", "Elena compró un libro.", "Lucía", "Elena")
    assert same_apart_from_swap(case, ("Lucía bought a book.", "Elena bought a book.")).passed
    assert same_apart_from_swap(case, ("Lucia bought a book.", "ELENA bought a book")).passed  # accents, case aside
    dropped = same_apart_from_swap(case, ("Lucía bought a book.", "Tom bought a book."))
    assert not dropped.passed and dropped.reason == "'Elena' is missing"
    rest = same_apart_from_swap(case, ("Lucía bought a book.", "Elena bought the book."))
    assert not rest.passed and rest.reason == "the rest changed: 'a' → 'the'"
    number = Case("Tengo 12 gatos.", "Tengo 40 gatos.", "12", "40")
    assert not same_apart_from_swap(number, ("I have 120 cats.", "I have 40 cats.")).passed  # a whole number only


def test_a_typed_form_must_give_the_same_words() -> None:
    case = Case("¿Está cansada?", "esta cansada")
    assert same_up_to_form(case, ("Is she tired?", "is she tired")).passed
    changed = same_up_to_form(case, ("The doctor phoned.", "The doctor called."))
    assert not changed.passed and "'phoned' → 'called'" in changed.reason


def test_a_directional_change_must_show_in_the_translation() -> None:
    pronoun = Case("Él está cansado.", "Ella está cansada.", "he", "she")
    assert word_changes(pronoun, ("He's tired.", "She's tired.")).passed  # "he's" holds "he"
    same = word_changes(pronoun, ("He is tired.", "He is tired."))
    assert not same.passed and same.reason == "no 'she' in the changed sentence's translation"
    plural = Case("Veo una caja.", "Veo dos cajas.", "box", "boxes")
    assert word_changes(plural, ("I see a box.", "I see two boxes.")).passed
    assert not word_changes(plural, ("I see a box.", "I see two box.")).passed
    negation = Case("Mi hermano come carne.", "Mi hermano no come carne.")
    assert negation_added(negation, ("My brother eats meat.", "My brother doesn't eat meat.")).passed
    missing = negation_added(negation, ("My brother eats meat.", "My brother eats meat."))
    assert not missing.passed and missing.reason.startswith("no negation")
    assert not negation_added(negation, ("My brother never eats meat.", "My brother doesn't eat meat.")).passed


def test_the_runner_reports_exactly_a_hand_made_model_failure() -> None:
    """A fake model that copies its source (invariant tests pass) but drops one name: exactly the cases holding
    that name fail, with the reason, and every sentence is translated once, in batches."""
    tests = (BY_NAME["name swap"], BY_NAME["number change"], BY_NAME["typed form"])
    lost = tests[0].cases()[0].after
    calls: list[list[str]] = []

    def fake(texts: list[str]) -> list[Reading]:
        calls.append(texts)
        return [Reading(t.replace(lost, "Tom"), t.replace(lost, "Tom")) for t in texts]

    seen: list[tuple[int, int]] = []
    names, numbers, typed = run(fake, tests, progress=lambda done, total: seen.append((done, total)))
    assert numbers.passed == len(numbers.outcomes) and typed.passed == len(typed.outcomes)
    expected = [c for c in tests[0].cases() if lost in (c.before, c.after)]
    assert expected and [o.case for o in names.failures] == expected
    assert names.passed == len(names.outcomes) - len(expected)
    assert all(o.verdict.reason == f"'{lost}' is missing" for o in names.failures)
    sent = [s for chunk in calls for s in chunk]
    assert len(sent) == len(set(sent)) and all(len(chunk) <= BATCH for chunk in calls)
    assert seen[-1] == (len(sent), len(sent)) and len(seen) == len(calls)


def test_the_system_and_the_model_alone_are_checked_apart_and_cases_read_alike_counted() -> None:
    """A fake guard reads every name of the name swap's sentences as "Tom" and puts it back (the system copies its
    source), while the model alone loses every name: the system passes all, all of them read alike, none passes read
    apart, and the model alone passes none; the number cases, read as typed, are nobody's by construction."""
    names, numbers = BY_NAME["name swap"], BY_NAME["number change"]
    people = {c.before for c in names.cases()} | {c.after for c in names.cases()}

    def fake(texts: list[str]) -> list[Reading]:
        out = []
        for t in texts:
            read = t
            for name in people:
                read = read.replace(name, "Tom")
            out.append(Reading(t, read.replace("Tom", "someone"), read if read != t else ""))
        return out

    swap, number = run(fake, (names, numbers))
    n = len(swap.outcomes)
    assert swap.passed == swap.read_alike == n and swap.passed_read_apart == 0 and swap.passed_alone == 0
    assert swap.failures == list(swap.outcomes) and all(
        o.alone_verdict.reason.endswith("is missing") for o in swap.outcomes
    )
    assert number.read_alike == 0 and number.passed == number.passed_read_apart == number.passed_alone == n


def behaviour_page(lost: str, source: str = "es") -> None:
    """The tab with a fake model that copies its source but drops ``lost``; an opened case is kept in the state."""
    from types import SimpleNamespace

    import streamlit as st

    from lab.page.direction import Languages
    from lab.page.request import Request
    from views.behaviour_tab import show_behaviour

    class Copying:
        guard = None

        def translate_all(self, texts: list[str], options: object, batch_size: int) -> list[SimpleNamespace]:
            return [SimpleNamespace(text=t.replace(lost, "Tom"), guarded=None) for t in texts]

        def translate_many(self, texts: list[str], options: object, batch_size: int) -> list[str]:
            return [t.text for t in self.translate_all(texts, options, batch_size)]

    def open_source(text: str) -> None:
        st.session_state["opened"] = text

    langs = Languages(source, "en" if source == "es" else "es", "Spanish", "English")
    request = Request("fake", "fake", "", 1, 1.0, 1)
    ctx = SimpleNamespace(translator=Copying(), request=request, open_source=open_source, langs=langs)
    show_behaviour(ctx)  # type: ignore[arg-type]


def select_row(at: AppTest, table: Dataframe, row: int) -> None:
    """Run the app as after a click on ``row`` of ``table`` (AppTest cannot select a row: the test sends the widget
    state the browser sends)."""
    states = at._tree.get_widget_states()
    selection = {"selection": {"rows": [row], "columns": [], "cells": []}}
    states.widgets.append(WidgetState(id=table.proto.id, string_value=json.dumps(selection)))
    at._tree._runner._run(states)


def test_tab_lists_each_test_and_a_failing_case_opens_in_the_lab() -> None:
    lost = BY_NAME["name swap"].cases()[0].after
    at = AppTest.from_function(behaviour_page, args=(lost,), default_timeout=30).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("the system is the model alone" in c.value for c in at.caption)  # this fake model has no guard
    at.button(key="behaviour_run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    summary = at.dataframe[0].value
    assert list(summary["test"]) == [t.name for t in TESTS] and (summary["cases"] >= 50).all()
    assert (summary["system"] == summary["model alone"]).all() and (summary["read alike"] == 0).all()
    table = at.dataframe[1]  # the name swap's failing cases
    failing = table.value
    assert (
        set(failing["system: why it failed"]) == set(failing["model alone: why it failed"]) == {f"'{lost}' is missing"}
    )
    select_row(at, table, 0)
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["opened"] == failing["changed"].iloc[0]


def test_a_model_of_another_source_language_is_told_the_tests_are_spanish() -> None:
    at = AppTest.from_function(behaviour_page, args=("Lucía", "en"), default_timeout=30).run()
    assert not at.exception and not at.button and "are Spanish sentences" in at.info[0].value


def test_the_workshop_table_has_a_row_per_test_with_one_failing_case() -> None:
    tests = (BY_NAME["name swap"], BY_NAME["negation"])
    lost = tests[0].cases()[0].after
    printed = table(run(lambda texts: [Reading(t.replace(lost, "Tom"), t) for t in texts], tests)).splitlines()
    assert all(head in printed[0] for head in HEAD) and len(printed) == 3
    assert f"('{lost}' is missing)" in printed[1] and printed[1].startswith("name swap")
    assert printed[2].startswith("negation") and "directional" in printed[2]
