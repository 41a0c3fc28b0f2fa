"""Click a word of the translation, pick one of the model's alternatives there: the words before it kept, the choice
forced, the rest written by the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import translated
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import ButtonGroup

from lab.attention.map_views import Followed
from lab.attention.step_choices import choices, prefix_with
from lab.page.output_words import output_words
from lab.whatif.forced_prefix import force
from lab.whatif.steering import GREEDY, Steered, output_log_probs, search
from translate.translator import DEFAULT_MODEL, Candidate, Translator
from views.word_shading import shaded_line


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_prefix_with_keeps_the_steps_before_and_ends_with_the_token() -> None:
    assert prefix_with([5, 6, 7, 3], 0, 9) == [9]
    assert prefix_with([5, 6, 7, 3], 2, 9) == [5, 6, 9]
    assert prefix_with([5, 6, 7, 3], 3, 3) == [5, 6, 7, 3]


def test_the_top_candidate_gives_back_the_output_and_another_keeps_the_words_before_it(translator: Translator) -> None:
    model, tok = translator.model, translator.tokenizer
    result = translator.translate("La semana pasada mi hermana compró un coche rojo muy bonito en el centro.")
    src, out = result.src_ids, result.best.tokens
    assert search(Steered(model), src, GREEDY)[0] == out  # the page's greedy output
    steps = choices(model, tok, src, out)
    assert [s.log_prob for s in steps] == pytest.approx(list(result.best.token_log_probs), abs=1e-4)  # one record
    for step in steps:
        assert step.top_ids[0] == out[step.step]  # greedy takes the most probable
        own = force(model, src, prefix_with(out, step.step, step.top_ids[0]), out)
        assert own.tokens == out and own.log_prob == pytest.approx(own.original_log_prob, abs=1e-5)
    beautiful = next(w for w in output_words(tok, result.best) if w.text == "beautiful")
    step = steps[beautiful.positions[0]]
    for token in step.top_ids[1:]:
        prefix = prefix_with(out, step.step, token)
        other = force(model, src, prefix, out)
        assert other.tokens[: len(prefix)] == prefix and other.tokens[-1] == tok.tgt.eos_id()
        assert other.log_prob == pytest.approx(float(output_log_probs(model, src, other.tokens).sum()), abs=1e-4)


def pills(at: AppTest, prefix: str) -> ButtonGroup:
    (found,) = [p for p in at.button_group if str(p.key).startswith(prefix)]
    return found


def test_clicking_a_word_and_an_alternative_rewrites_the_rest(model_env: Path) -> None:
    text = "El perro azul 7."
    at = translated(text)
    translator = Translator.load(model_env)
    result = translator.translate(text)
    src, out = result.src_ids, result.best.tokens
    words = output_words(translator.tokenizer, result.best)
    pills(at, "word_").set_value(1).run()
    assert not at.exception, [e.stack_trace for e in at.exception]
    assert at.session_state["follow"] == Followed("tgt", words[1].positions[0])  # its row lit in the maps
    step = choices(translator.model, translator.tokenizer, src, out)[words[1].positions[0]]
    alternatives = pills(at, "alternative_")
    assert len(alternatives.options) == len(step.top_ids)
    alternatives.set_value(1).run()
    assert not at.exception, [e.stack_trace for e in at.exception]
    expected = force(translator.model, src, prefix_with(out, step.step, step.top_ids[1]), out)
    rewritten = at.main.get_by_key("rewritten")
    assert rewritten.text[0].value == translator.tokenizer.decode_tgt(expected.tokens)
    new = Candidate(
        expected.tokens, expected.log_prob, expected.log_prob, token_log_probs=expected.token_log_probs, text=""
    )
    shaded = output_words(translator.tokenizer, new)  # read from the forced pass's record
    assert rewritten.get("html")[0].proto.body == shaded_line(shaded) and len(shaded) > 1
    assert any(f"log p = {expected.log_prob:.3f} against the original's" in c.value for c in at.caption)
    (new_map,) = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart") if "new translation" in c.proto.spec]
    assert all(" → " in row for row in new_map["encoding"]["y"]["sort"])  # rows labelled as in the maps: a → b
    pills(at, "word_").set_value(None).run()  # no word picked: nothing rewritten
    assert not at.exception, [e.stack_trace for e in at.exception]
    assert not [p for p in at.button_group if str(p.key).startswith("alternative_")]  # no alternatives offered
    with pytest.raises(KeyError):
        at.main.get_by_key("rewritten")
