"""The words of a translation and how sure the model was of each: read from the record, never recomputed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import translated

from lab.page.output_words import EDGES, OutputWord, load_calibration, output_words
from lab.whatif.steering import output_log_probs
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from views.word_shading import legend, word_span
from workshop.bench.word_confidence import calibrate

SENTENCES = ("La semana pasada mi hermana compró un coche rojo muy bonito en el centro.", "¿Dónde está? No lo sé.")


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.load(DEFAULT_MODEL)


@pytest.mark.parametrize("options", [DecodeOptions(), DecodeOptions(beam_size=4, n_best=3)], ids=["greedy", "beam"])
def test_a_words_probability_is_its_least_sure_piece_of_the_record(shipped: Translator, options: DecodeOptions) -> None:
    for text in SENTENCES:
        result = shipped.translate(text, options)
        for candidate in result.candidates:
            forced = output_log_probs(shipped.model, result.src_ids, candidate.tokens).tolist()
            assert candidate.token_log_probs == pytest.approx(forced, abs=1e-4)  # the record is the model's own
            words = output_words(shipped.tokenizer, candidate)
            assert [i for w in words for i in w.positions] == list(range(len(candidate.tokens) - 1))  # EOS left out
            for word in words:
                assert word.prob == math.exp(min(candidate.token_log_probs[i] for i in word.positions))
            assert " ".join(w.text for w in words) == candidate.text


def test_the_guards_words_are_marked_as_put_back(shipped: Translator) -> None:
    result = shipped.translate("Me llamo Ana y vivo en Sevilla.")
    words = output_words(shipped.tokenizer, result.best, result.guarded)
    assert [(w.text, w.stand_in) for w in words if w.stand_in] == [("Ana", "Mary"), ("Sevilla.", "Boston")]
    assert " ".join(w.text for w in words) == result.text
    assert "put back by the name guard: the model wrote Mary" in word_span(words[3])


def test_a_word_is_escaped_and_shaded_by_its_band() -> None:
    span = word_span(OutputWord("<b>&", (0,), 0.3))
    assert "&lt;b&gt;&amp;" in span and "<b>" not in span
    assert [OutputWord("x", (0,), p).shade for p in (0.1, *EDGES, 0.99)] == [0, 1, 2, 3, 3]


def test_calibration_counts_words_not_in_the_reference_per_shade(tmp_path: Path) -> None:
    words = [(OutputWord("Cat.", (0,), 0.95), "The cat."), (OutputWord("dog", (1,), 0.95), "The cat.")]
    words += [(OutputWord("Tom", (2,), 0.1, stand_in="Mary"), "x"), (OutputWord(".", (3,), 0.1), "x")]
    calibration = calibrate(words, "two words")
    assert [(b.words, b.wrong) for b in calibration.bands] == [(0, 0), (0, 0), (0, 0), (2, 1)]
    (tmp_path / "word_confidence.json").write_text(calibration.to_json())
    assert load_calibration(tmp_path) == calibration
    assert load_calibration(tmp_path / "missing") is None


def test_the_shipped_model_ships_its_calibration_and_the_legend_quotes_it() -> None:
    calibration = load_calibration(DEFAULT_MODEL)
    assert calibration is not None and sum(b.words for b in calibration.bands) > 10_000
    shares = [b.wrong / b.words for b in calibration.bands]
    assert shares == sorted(shares, reverse=True)  # the paler, the more often wrong
    text = legend(calibration)
    for band in calibration.bands:
        assert f"wrong about {round(10 * band.wrong / band.words)} in 10 times" in text


def test_the_page_shades_the_translation(model_env: Path) -> None:
    at = translated("El perro azul 7.")
    shaded = at.main.get_by_key("word_confidence")
    assert any(
        "Words this pale are" in m.value and "shade is the model's probability" in m.help for m in shaded.markdown
    )
    box = at.main.get_by_key("translation")  # shown once: the words to click (shaded by CSS), then as plain text
    assert [b for b in box.get("button_group") if str(b.key).startswith("word_")] and box.text[0].value.strip()
