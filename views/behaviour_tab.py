"""The Behaviour tests tab: CheckList's invariance and directional tests run on the model (``lab/behaviour``), the
system (model + name guard) and the model alone side by side per test, the cases the guard read alike counted apart,
and the failing cases; a failing case picked opens its changed sentence in the lab."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import pandas as pd
import streamlit as st

from lab.behaviour.cases import CASES, SEED, TESTS
from lab.behaviour.runner import Outcome, TestResult, model_translate, run
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext, open_selected

RESULT = "behaviour_result"  # (what was run, the results, seconds): kept so a failing case can be picked after it
ABOUT = (
    f"Does the model behave consistently? {len(TESTS)} tests of {CASES} generated cases each (CheckList, Ribeiro et "
    "al. 2020): each case is a Spanish sentence and a copy with one slot changed. An **invariant** test changes what "
    "must not change the rest of the translation (a name, a number, the way it is typed); a **directional** one "
    "changes what must change it in a known way (él → ella: he → she). Each case is checked on the **system** (the "
    "model under its name guard, as the page translates) and on the **model alone**; **read alike** counts the cases "
    "the guard reads as one stand-in sentence on both sides (Alberto and Esteban both read as Tom): the system passes "
    "those by construction, so **system, read apart** gives its passes among the others. Greedy decoding, whatever "
    f"the search settings; the sentences come from templates written for the lab, drawn with seed {SEED}. A pass "
    "rate measures these templates, not the model's quality: a failure can be a fair paraphrase, and a pass is no "
    "proof on other sentences. Select a failing case to open its changed sentence in the lab."
)


def summary(results: list[TestResult]) -> pd.DataFrame:
    """One row per test: its kind, what it expects, and how many of its cases the system and the model alone
    passed, with the cases the guard read alike apart."""
    return pd.DataFrame(
        {
            "test": [r.test.name for r in results],
            "kind": [r.test.kind for r in results],
            "cases": [len(r.outcomes) for r in results],
            "system": [r.passed for r in results],
            "read alike": [r.read_alike for r in results],
            "system, read apart": [f"{r.passed_read_apart} of {len(r.outcomes) - r.read_alike}" for r in results],
            "model alone": [r.passed_alone for r in results],
            "expects": [r.test.expects for r in results],
        }
    )


def failing(outcomes: list[Outcome]) -> pd.DataFrame:
    """One row per case the system or the model alone fails: both sentences, both translations of each, and why."""
    return pd.DataFrame(
        {
            "original": [o.case.original for o in outcomes],
            "changed": [o.case.changed for o in outcomes],
            "system": [" | ".join(o.translations) for o in outcomes],
            "system: why it failed": [o.verdict.reason or "(passed)" for o in outcomes],
            "model alone": [" | ".join(o.alone) for o in outcomes],
            "model alone: why it failed": [o.alone_verdict.reason or "(passed)" for o in outcomes],
            "read alike": [o.read_alike for o in outcomes],
        }
    )


def show_results(results: list[TestResult], seconds: float, open_source: Callable[[str], None]) -> None:
    """The summary table, then each test's failing cases in an expander."""
    cases = sum(len(r.outcomes) for r in results)
    st.caption(f"{cases} cases checked in {seconds:.1f} s.")
    st.dataframe(summary(results), hide_index=True)
    for i, result in enumerate(results):
        failed, n = result.failures, len(result.outcomes)
        said = f"the system fails {n - result.passed}, the model alone {n - result.passed_alone} of {n}"
        with st.expander(f"{result.test.name}: {said}"):
            st.caption(f"{result.test.kind.capitalize()}. {result.test.expects}")
            if not failed:
                continue
            key = f"behaviour_failures_{i}"
            st.dataframe(
                failing(failed),
                key=key,
                on_select=partial(open_selected, open_source, key, [o.case.changed for o in failed]),
                selection_mode="single-row",
                hide_index=True,
            )


def show_behaviour(ctx: TabContext) -> None:
    """Run, and the results of the last run for this model."""
    translator, langs = ctx.translator, ctx.langs
    st.caption(ABOUT)
    if langs.src_code != "es":
        st.info(f"The behaviour tests are Spanish sentences: this model reads {langs.src}.")
        return
    if translator.guard is None:
        st.caption("This model has no name guard: the system is the model alone.")
    asked = ctx.request.model
    if st.button("Run the behaviour tests", key="behaviour_run"):
        start = time.perf_counter()
        try:
            with in_line("behaviour tests"), slot():  # a progress bar that moves after each batch
                bar = st.progress(0.0, text="Translating the tests' sentences…")
                results = run(
                    model_translate(translator),
                    progress=lambda done, total: bar.progress(done / total, f"{done} of {total} sentences"),
                )
                bar.empty()
            st.session_state[RESULT] = (asked, results, time.perf_counter() - start)
        except Busy as err:
            st.error(str(err))
    kept = st.session_state.get(RESULT)
    if kept is not None and kept[0] == asked:
        show_results(kept[1], kept[2], ctx.open_source)
