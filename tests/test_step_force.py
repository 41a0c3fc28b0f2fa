"""Take another of a step's top candidates and let the model continue: the What if tab's forcing, from the step view."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab.attention.step_choices import choices, prefix_with
from lab.whatif.forced_prefix import force
from lab.whatif.steering import GREEDY, Steered, search
from translate.translator import DEFAULT_MODEL, Translator

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_prefix_with_keeps_the_steps_before_and_ends_with_the_token() -> None:
    assert prefix_with([5, 6, 7, 3], 0, 9) == [9]
    assert prefix_with([5, 6, 7, 3], 2, 9) == [5, 6, 9]
    assert prefix_with([5, 6, 7, 3], 3, 3) == [5, 6, 7, 3]


def test_the_top_candidate_gives_back_the_greedy_output_and_another_starts_with_it(translator: Translator) -> None:
    model, tok = translator.model, translator.tokenizer
    src = translator.translate("El perro come pan.").src_ids
    greedy, _ = search(Steered(model), src, GREEDY)
    steps = choices(model, tok, src, greedy)
    for step in steps:
        assert len(step.top_ids) == len(step.top) and [tok.tgt.id_to_piece(i) for i in step.top_ids] == [
            piece for piece, _ in step.top
        ]
        assert step.top_ids[0] == greedy[step.step]  # greedy takes the most probable
        own = force(model, src, prefix_with(greedy, step.step, step.top_ids[0]), greedy)
        assert own.tokens == greedy and own.log_prob == pytest.approx(own.original_log_prob, abs=1e-6)
    for step in (steps[0], steps[len(steps) // 2]):
        prefix = prefix_with(greedy, step.step, step.top_ids[1])
        other = force(model, src, prefix, greedy)
        assert other.tokens[: len(prefix)] == prefix and other.tokens != greedy
        assert other.tokens[-1] == tok.tgt.eos_id() or other.truncated


def test_the_step_view_continues_from_the_candidate_taken(model_env: Path) -> None:
    text = "El perro azul 7."
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="source").set_value(text)
    at.button(key="translate").click().run()
    at.session_state["view"] = "Step by step"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    translator = Translator.load(model_env)
    src = translator.translate(text).src_ids
    greedy, _ = search(Steered(translator.model), src, GREEDY)
    at.selectbox(key="step_force_pick").set_value(0).run()
    at.button(key="step_force_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    shown = at.main.get_by_key("step_forced_output").code[0].value
    assert shown == translator.tokenizer.decode_tgt(greedy)  # the model's own choice: its own output
    at.button(key="step_next").click().run()
    at.selectbox(key="step_force_pick").set_value(1).run()
    at.button(key="step_force_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    second = choices(translator.model, translator.tokenizer, src, greedy)[1]
    prefix = prefix_with(greedy, 1, second.top_ids[1])
    expected = force(translator.model, src, prefix, greedy)
    assert expected.tokens[: len(prefix)] == prefix
    assert at.main.get_by_key("step_forced_output").code[0].value == translator.tokenizer.decode_tgt(expected.tokens)
