"""Step-by-step decoding with probabilities, and the beam search replay, against the model's own search."""

from __future__ import annotations

import math

import pytest

from lab.attention.step_choices import TOP, Beam, BeamStep, Choice, beam_trace, choices, step_table
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator


def total_log_prob(steps: list[Choice]) -> float:
    """log p(output | source): the sum over steps of log p(chosen token)."""
    return math.fsum(c.log_prob for c in steps)


def final_hypotheses(steps: list[BeamStep], n_best: int) -> list[Beam]:
    """The ``n_best`` ended hypotheses by normalised score, best first (what beam search returns)."""
    ended = [b for s in steps for b in s.ended]
    return sorted(ended, key=lambda b: b.score, reverse=True)[:n_best]


SENTENCES = ("El gato negro duerme en la casa.", "¿Dónde está la estación de tren?", "Tengo hambre.")


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


@pytest.mark.parametrize("text", SENTENCES)
def test_greedy_takes_the_most_probable_token_and_the_probabilities_multiply_to_its_score(
    translator: Translator, text: str
) -> None:
    result = translator.translate(text)
    hyp = result.best
    steps = choices(translator.model, translator.tokenizer, result.src_ids, hyp.tokens)
    assert [c.token for c in steps] == translator.tokenizer.tgt_pieces(hyp.tokens)
    assert steps[-1].token == "</s>"
    for c in steps:
        assert len(c.top) == TOP and c.top[0][1] >= c.top[-1][1]
        assert 0.0 < c.prob <= 1.0 and sum(p for _, p in c.top) <= 1.0 + 1e-6
        if not hyp.truncated:
            assert c.rank == 1 and c.top[0] == (c.token, pytest.approx(c.prob))
    assert total_log_prob(steps) == pytest.approx(hyp.log_prob, abs=1e-3)


def test_each_beam_hypothesis_is_the_product_of_its_step_probabilities(translator: Translator) -> None:
    result = translator.translate(SENTENCES[0], DecodeOptions(beam_size=4, n_best=3))
    for hyp in result.candidates:
        steps = choices(translator.model, translator.tokenizer, result.src_ids, hyp.tokens)
        assert total_log_prob(steps) == pytest.approx(hyp.log_prob, abs=1e-3)
        assert all(c.rank >= 1 for c in steps)


@pytest.mark.parametrize("text", SENTENCES)
def test_the_beam_replay_ends_with_the_hypotheses_beam_search_returns(translator: Translator, text: str) -> None:
    options = DecodeOptions(beam_size=4, n_best=4, length_penalty=1.0)
    result = translator.translate(text, options)
    steps = beam_trace(translator.model, translator.tokenizer, result.src_ids, beam_size=4, length_penalty=1.0)
    replayed = final_hypotheses(steps, 4)
    assert [b.ids for b in replayed] == [h.tokens for h in result.candidates]
    for b, h in zip(replayed, result.candidates, strict=True):
        assert b.score == pytest.approx(h.score, abs=1e-3) and b.text == translator.tokenizer.decode_tgt(h.tokens)
    for s in steps:
        assert len(s.alive) <= 4
        assert [b.log_prob for b in s.alive] == sorted((b.log_prob for b in s.alive), reverse=True)
        assert all(len(b.ids) == s.step + 1 for b in s.alive + s.ended)
        assert all(b.ids[-1] == translator.model.config.eos_id for b in s.ended)
        assert all(math.isfinite(b.log_prob) and b.log_prob <= 0 for b in s.alive + s.ended)
    table = step_table(steps[-1])
    assert len(table) == len(steps[-1].alive) + len(steps[-1].ended)
    assert all(row["hypothesis"] for row in table) and table[-1][""] == "ended"
