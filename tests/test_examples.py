"""Against the shipped model: the guided examples translate to an accepted answer, and garbage in is flagged."""

from __future__ import annotations

import pytest

from lab.attention.explain import explain
from lab.page.direction import languages
from lab.page.examples import EXAMPLES, GuidedExample, is_accepted
from lab.page.language_check import evidence, warnings
from translate.translator import DEFAULT_MODEL, Translator


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.source)
def test_the_shipped_model_translates_each_guided_example_correctly(
    translator: Translator, example: GuidedExample
) -> None:
    result = explain(translator, example.source)
    assert is_accepted(result.text, example), f"{example.source!r} -> {result.text!r}, not in {example.accepted}"
    c = translator.model.config
    assert warnings(evidence(result, c.unk_id, c.eos_id), languages(DEFAULT_MODEL)) == []


@pytest.mark.parametrize(
    "text", ["12345", "!!! ...", "你好 世界", "My name is Tom.", "Where is the train station?", "The cat is black."]
)
def test_input_that_is_not_spanish_gets_a_warning(translator: Translator, text: str) -> None:
    c = translator.model.config
    found = warnings(evidence(explain(translator, text), c.unk_id, c.eos_id), languages(DEFAULT_MODEL))
    assert found and all("Spanish" in w for w in found)
