"""Point at an output word: the source words it attended to, by the stated reading, on the source as typed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lab.alignment.bench_result import default_reading, load_alignment
from lab.alignment.methods import Method
from lab.alignment.source_words import WordSources, hover_reading, word_sources
from lab.page.output_words import output_words
from model.attention_maps import inspect
from model.run_dir import ALIGNMENT_FILE
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translation, Translator
from views.source_line import hover_css, source_line


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def sources_of(translator: Translator, result: Translation, method: Method) -> WordSources | None:
    words = output_words(translator.tokenizer, result.best, result.guarded)
    cross = inspect(translator.model, result.src_ids, result.best.tokens).cross.numpy()
    return word_sources(translator.tokenizer, result, result.best.tokens, words, cross, method)


def lit(translator: Translator, text: str) -> tuple[WordSources, dict[str, list[str]]]:
    """The sources of ``text``'s translation and, for each output word, the source words lit, by the hover's reading."""
    result = translator.translate(text, DecodeOptions(marks=True))
    c = translator.model.config
    method, _ = hover_reading(load_alignment(DEFAULT_MODEL), c.n_decoder_layers, c.n_heads)
    sources = sources_of(translator, result, method)
    assert sources is not None
    words = output_words(translator.tokenizer, result.best, result.guarded)
    pairs = zip(words, sources.links, strict=True)  # one set of source words per output word
    return sources, {w.text: [sources.source[i].text for i in sorted(s)] for w, s in pairs}


def test_the_hover_reads_the_stored_reading_nearest_peoples_links_on_dev(translator: Translator) -> None:
    records = json.loads((DEFAULT_MODEL / ALIGNMENT_FILE).read_text(encoding="utf-8"))["records"]
    nearest = min((r for r in records if r.get("layer_index") is not None), key=lambda r: r["dev_aer"])
    c = translator.model.config
    method, aer = hover_reading(load_alignment(DEFAULT_MODEL), c.n_decoder_layers, c.n_heads)
    assert method == Method.from_fields(nearest) and aer == nearest["aer"]
    assert all(nearest["dev_aer"] <= r["dev_aer"] for r in records if r.get("method", "").startswith("layer"))
    assert hover_reading(None, 3, 4) == (default_reading(3), None)  # no stored result: the maps' default, unmeasured


def test_a_marked_name_is_shown_as_typed_and_lit_from_the_word_put_back(translator: Translator) -> None:
    sources, links = lit(translator, "[[Rosa]] es mi hermana.")
    assert "".join(w.before + w.text for w in sources.source) == "Rosa es mi hermana."  # the marks never shown
    rosa = sources.source[0]
    assert rosa.text == "Rosa" and rosa.stand_in and rosa.stand_in != "Rosa"  # what the model read instead
    assert links["Rosa"] == ["Rosa"] and "hermana" in links["sister."]


def test_the_source_is_cut_as_the_model_cut_it_and_a_number_stays_whole(translator: Translator) -> None:
    sources, links = lit(translator, "¿Dónde vive Ana? Llamé al 91 234 56 78 ayer.")
    shown = [w.text for w in sources.source]
    assert shown == ["¿", "Dónde", "vive", "Ana", "?", "Llamé", "al", "91 234 56 78", "ayer", "."]
    assert "".join(w.before + w.text for w in sources.source) == "¿Dónde vive Ana? Llamé al 91 234 56 78 ayer."
    assert [w.text for w in sources.source if w.stand_in] == ["Ana", "91 234 56 78"]
    assert links["Ana"] == ["Ana"] and "91 234 56 78" in links["91 234 56 78"]


def test_a_source_the_model_did_not_read_word_for_word_is_not_shown(translator: Translator) -> None:
    result = translator.translate("El gato duerme.")
    assert sources_of(translator, replace(result, source="El gato duerme. Otra"), default_reading(3)) is None


def test_the_page_lights_each_words_sources_from_its_pill_and_escapes_the_text(translator: Translator) -> None:
    sources, _ = lit(translator, "<b>Hola</b> & adiós.")
    line = source_line(sources)
    assert "<b>" not in line and "&lt;b&gt;" in line
    css = hover_css("word_k", sources)
    for i, words in enumerate(sources.links):
        assert (f":nth-of-type({i + 1}):hover" in css) == bool(words)
        assert all(f".sw{j}" in css for j in words)


def test_a_model_without_a_stored_result_says_its_aer_is_not_measured(tmp_path: Path) -> None:
    assert load_alignment(tmp_path) is None
    assert hover_reading(load_alignment(tmp_path), 6, 8)[1] is None
