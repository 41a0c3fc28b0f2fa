"""Take another of a step's top candidates and let the model continue: the What if tab's forcing, from the step view."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import translated
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Selectbox

from lab.attention.step_choices import choices, prefix_with
from lab.whatif.forced_prefix import force
from lab.whatif.steering import GREEDY, Steered, search
from translate.translator import DEFAULT_MODEL, Translator
from views.steps_tab import PICK


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def candidate_box(at: AppTest) -> Selectbox:
    """The step's one "Take another candidate here" box."""
    boxes = [box for box in at.selectbox if str(box.key).startswith(PICK)]
    assert len(boxes) == 1, [box.key for box in boxes]
    return boxes[0]


def taken_notes(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**At step")]


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
    at = translated(text, "Step by step")
    translator = Translator.load(model_env)
    src = translator.translate(text).src_ids
    greedy, _ = search(Steered(translator.model), src, GREEDY)
    candidate_box(at).set_value(0).run()
    at.button(key="step_force_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    shown = at.main.get_by_key("step_forced_output").code[0].value
    assert shown == translator.tokenizer.decode_tgt(greedy)  # the model's own choice: its own output
    at.button(key="step_next").click().run()
    candidate_box(at).set_value(1).run()
    at.button(key="step_force_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    second = choices(translator.model, translator.tokenizer, src, greedy)[1]
    prefix = prefix_with(greedy, 1, second.top_ids[1])
    expected = force(translator.model, src, prefix, greedy)
    assert expected.tokens[: len(prefix)] == prefix
    assert at.main.get_by_key("step_forced_output").code[0].value == translator.tokenizer.decode_tgt(expected.tokens)


def test_each_step_offers_its_own_candidates_and_the_taken_note_stays_at_its_step(model_env: Path) -> None:
    """One box per step: a pick at step 1 neither shows nor is used at step 2, and "At step 1, …" shows at step 1."""
    text = "El perro azul 7."
    at = translated(text, "Step by step")
    translator = Translator.load(model_env)
    src = translator.translate(text).src_ids
    greedy, _ = search(Steered(translator.model), src, GREEDY)
    steps = choices(translator.model, translator.tokenizer, src, greedy)
    first = candidate_box(at)
    first.set_value(2).run()
    at.button(key="step_force_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert [n.startswith(f"**At step 1, {steps[0].top[2][0]} ") for n in taken_notes(at)] == [True]
    at.button(key="step_next").click().run()
    assert taken_notes(at) == []  # the note of step 1 is not shown at step 2
    second = candidate_box(at)
    assert second.value == 1 and second.key != first.key  # step 2's own box, at its default: the 2nd candidate
    assert second.options == [f"{i + 1}. {piece}  (p = {p:.3f})" for i, (piece, p) in enumerate(steps[1].top)]
    second.set_value(3).run()
    at.button(key="step_force_go").click().run()
    shown = candidate_box(at).format_func(candidate_box(at).value)
    assert [n.startswith(f"**At step 2, {shown.split()[1]} ") for n in taken_notes(at)] == [True]  # the one on screen
    assert shown.split()[1] == steps[1].top[3][0]
    at.button(key="step_prev").click().run()
    back = candidate_box(at)
    assert taken_notes(at) == [] and back.key == first.key  # back at step 1: its own box; step 2's note not shown
    assert back.options == [f"{i + 1}. {piece}  (p = {p:.3f})" for i, (piece, p) in enumerate(steps[0].top)]
