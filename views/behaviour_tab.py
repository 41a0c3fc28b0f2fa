"""The Behaviour tests tab: CheckList's invariance and directional tests run on the model (``lab/behaviour``), a
pass rate per test and its failing cases; a failing case picked opens its changed sentence in the lab."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import pandas as pd
import streamlit as st

from lab.behaviour.cases import CASES, SEED, TESTS
from lab.behaviour.runner import Outcome, TestResult, model_translate, run
from lab.page.direction import Languages
from lab.page.request import Request
from translate.translator import Translator
from views.heavy_slot import Busy, in_line, slot

RESULT = "behaviour_result"  # (what was run, the results, seconds): kept so a failing case can be picked after it
ABOUT = (
    f"Does the model behave consistently? {len(TESTS)} tests of {CASES} generated cases each (CheckList, Ribeiro et "
    "al. 2020): each case is a Spanish sentence and a copy with one slot changed. An **invariant** test changes what "
    "must not change the rest of the translation (a name, a number, the way it is typed); a **directional** one "
    "changes what must change it in a known way (él → ella: he → she). Greedy decoding, whatever the search settings; "
    f"the sentences come from templates written for the lab, drawn with seed {SEED}. A pass rate measures these "
    "templates, not the model's quality: a failure can be a fair paraphrase, and a pass is no proof on other "
    "sentences. Select a failing case to open its changed sentence in the lab."
)


def results_with_progress(translator: Translator, name_guard: bool) -> list[TestResult]:
    """``run`` with a progress bar that moves after each batch, in the server's heavy slot."""
    with in_line("behaviour tests"), slot():
        bar = st.progress(0.0, text="Translating the tests' sentences…")
        results = run(
            model_translate(translator, name_guard),
            progress=lambda done, total: bar.progress(done / total, f"{done} of {total} sentences"),
        )
        bar.empty()
    return results


def summary(results: list[TestResult]) -> pd.DataFrame:
    """One row per test: its kind, what it expects, and how many of its cases passed."""
    return pd.DataFrame(
        {
            "test": [r.test.name for r in results],
            "kind": [r.test.kind for r in results],
            "cases": [len(r.outcomes) for r in results],
            "passed": [r.passed for r in results],
            "rate": [r.rate for r in results],
            "expects": [r.test.expects for r in results],
        }
    )


def failing(outcomes: list[Outcome]) -> pd.DataFrame:
    """One row per failing case: both sentences, both translations, and why it failed."""
    return pd.DataFrame(
        {
            "original": [o.case.original for o in outcomes],
            "changed": [o.case.changed for o in outcomes],
            "translation of the original": [o.translations[0] for o in outcomes],
            "translation of the changed": [o.translations[1] for o in outcomes],
            "why it failed": [o.verdict.reason for o in outcomes],
        }
    )


def open_picked(outcomes: list[Outcome], key: str, open_source: Callable[[str], None]) -> None:
    """A failing case selected in a table: its changed sentence opens in the lab."""
    rows = st.session_state[key].selection.rows
    if rows:
        open_source(outcomes[rows[0]].case.changed)


def show_results(results: list[TestResult], seconds: float, open_source: Callable[[str], None]) -> None:
    """The summary table, then each test's failing cases in an expander."""
    cases = sum(len(r.outcomes) for r in results)
    st.caption(f"{cases} cases checked in {seconds:.1f} s.")
    st.dataframe(
        summary(results),
        hide_index=True,
        column_config={"rate": st.column_config.NumberColumn(format="percent", help="share of the cases passed")},
    )
    for i, result in enumerate(results):
        failed = result.failures
        with st.expander(f"{result.test.name}: {len(failed)} of {len(result.outcomes)} failed"):
            st.caption(f"{result.test.kind.capitalize()}. {result.test.expects}")
            if not failed:
                continue
            key = f"behaviour_failures_{i}"
            st.dataframe(
                failing(failed),
                key=key,
                on_select=partial(open_picked, failed, key, open_source),
                selection_mode="single-row",
                hide_index=True,
            )


def show_behaviour(
    translator: Translator, request: Request, open_source: Callable[[str], None], langs: Languages
) -> None:
    """The guard switch, Run, and the results of the last run for this model and switch."""
    st.caption(ABOUT)
    if langs.src_code != "es":
        st.info(f"The behaviour tests are Spanish sentences: this model reads {langs.src}.")
        return
    has_guard = translator.guard is not None
    guard = st.toggle(
        "Name guard",
        value=request.name_guard and has_guard,
        key="behaviour_guard",
        disabled=not has_guard,
        help="On: names, places and numbers are read as stand-ins and put back, as the page translates. Off: the "
        "model alone." + ("" if has_guard else " This model has no name guard."),
    )
    asked = (request.model, guard)
    if st.button("Run the behaviour tests", key="behaviour_run"):
        try:
            start = time.perf_counter()
            results = results_with_progress(translator, guard)
            st.session_state[RESULT] = (asked, results, time.perf_counter() - start)
        except Busy as err:
            st.error(str(err))
    kept = st.session_state.get(RESULT)
    if kept is not None and kept[0] == asked:
        show_results(kept[1], kept[2], open_source)
