"""The translation as a text to work with, in Chromium (issue 67): point at an output word and its source words light
up, click a word and pick an alternative, mark a span to keep as typed."""

from __future__ import annotations

import re

import pytest
from conftest import BROWSER_MARKS, PATIENCE_MS, RUNNING, browser_page

from lab.alignment.bench_result import load_alignment
from lab.alignment.source_words import hover_reading, word_sources
from lab.attention.step_choices import choices, prefix_with
from lab.page.output_words import output_words
from lab.whatif.forced_prefix import force
from model.attention_maps import inspect
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

pytestmark = BROWSER_MARKS
PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

SENTENCE = "La semana pasada mi hermana compró un coche rojo muy bonito en el centro."
LAPTOP = {"width": 1280, "height": 800}
SETTLED = "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0"
LIT = "rgb(253, 224, 71)"  # views/source_line.LIT's background
REWRITTEN = "document.querySelector('.st-key-rewritten [data-testid=\"stText\"]')?.innerText.trim() ?? ''"
SOURCE_BACKGROUNDS = """() => Array.from(document.querySelectorAll('.source-words span'))
    .map(span => [span.textContent, getComputedStyle(span).backgroundColor])"""


PLAIN = "document.querySelector('.st-key-translation [data-testid=\"stText\"]')?.innerText.trim()"  # under its words
SHOWN = f"""([english, source]) => {PLAIN} === english
    && document.querySelector('.source-words')?.textContent === source"""


NOW_SHOWN = f"""() => [{PLAIN},
    document.querySelector('.source-words')?.textContent,
    Array.from(document.querySelectorAll('[data-testid="stException"], [data-testid="stAlert"]')).map(e => e.innerText)]"""


def translate_in(page, text: str, expected: str) -> None:  # page: playwright's Page
    """Type ``text``, press Translate, and wait until the page shows ``expected`` and its source word by word (pressed
    again if the page never shows them: a press during a rerun can be lost)."""
    box = page.get_by_role("textbox", name="Spanish sentence")
    box.wait_for(timeout=PATIENCE_MS)
    page.wait_for_function(f"({RUNNING})() && ({SETTLED})()", timeout=PATIENCE_MS)
    box.fill(text)
    for attempt in range(4):
        page.get_by_role("button", name="Translate").click()
        try:
            shown = [expected, text.replace("[[", "").replace("]]", "")]
            page.wait_for_function(SHOWN, arg=shown, timeout=PATIENCE_MS // 4)
            break
        except PlaywrightTimeout:
            if attempt == 3:
                raise AssertionError((shown, page.evaluate(NOW_SHOWN))) from None
    page.wait_for_function(SETTLED, timeout=PATIENCE_MS)


def pick(page, group, name: str | None = None, nth: int = 0) -> None:  # page, group: playwright's Page, Locator
    """Click a pill of ``group`` (by ``name``, else the ``nth``) until it is the one picked: a click during a rerun
    can be lost."""
    pill = group.get_by_role("radio", name=name, exact=True) if name else group.get_by_role("radio").nth(nth)
    for _ in range(5):
        pill.click()
        page.wait_for_function(SETTLED, timeout=PATIENCE_MS)
        if pill.get_attribute("aria-checked") == "true":
            return
    raise AssertionError(f"the pill {name or nth} was never picked")


def test_point_at_a_word_pick_an_alternative_and_keep_a_name_as_typed(shipped_app_url: str) -> None:
    translator = Translator.load(DEFAULT_MODEL)
    tok, config = translator.tokenizer, translator.model.config
    result = translator.translate(SENTENCE, DecodeOptions(marks=True))
    words = output_words(tok, result.best)
    method, _ = hover_reading(load_alignment(DEFAULT_MODEL), config.n_decoder_layers, config.n_heads)
    cross = inspect(translator.model, result.src_ids, result.best.tokens).cross.numpy()
    sources = word_sources(tok, result, result.best.tokens, words, cross, method)
    assert sources is not None
    sister = next(i for i, w in enumerate(words) if w.text == "sister")
    lit = [sources.source[j].text for j in sorted(sources.links[sister])]
    beautiful = next(w for w in words if w.text == "beautiful")
    step = choices(translator.model, tok, result.src_ids, result.best.tokens)[beautiful.positions[0]]
    prefix = prefix_with(result.best.tokens, step.step, step.top_ids[1])
    rewritten = tok.decode_tgt(force(translator.model, result.src_ids, prefix, result.best.tokens).tokens)

    with browser_page(LAPTOP) as (page, page_errors):
        page.goto(shipped_app_url)
        translate_in(page, SENTENCE, result.text)
        clickable = page.get_by_role("radiogroup", name=re.compile("^Each word shaded"))
        before = page.evaluate(SOURCE_BACKGROUNDS)
        clickable.get_by_role("radio", name="sister", exact=True).hover()
        page.wait_for_function(
            f"() => ({SOURCE_BACKGROUNDS})().some(([, colour]) => colour === {LIT!r})", timeout=PATIENCE_MS
        )
        pointed = page.evaluate(SOURCE_BACKGROUNDS)

        pick(page, clickable, "beautiful")
        alternatives = page.get_by_role("radiogroup", name=re.compile("^Instead of “beautiful”"))
        pick(page, alternatives, nth=1)
        page.wait_for_function(f"({REWRITTEN}).length > 0", timeout=PATIENCE_MS)
        new, shaded = page.evaluate(REWRITTEN), page.locator(".st-key-rewritten .shaded span").all_inner_texts()
        followed = page.locator(".st-key-follow input").first.input_value()  # the maps light the clicked word's row

        translate_in(page, "[[Rosa]] es mi hermana.", "Rosa is my sister.")
        rosa = page.locator(".source-words span").first
        kept = rosa.text_content(), rosa.get_attribute("title")
        exceptions = page.locator('[data-testid="stException"]').count()
    assert exceptions == 0 and not page_errors, page_errors
    assert [text for text, _ in before] == [w.text for w in sources.source] and LIT not in {c for _, c in before}
    assert "hermana" in lit and [text for text, colour in pointed if colour == LIT] == lit, (pointed, lit)
    assert new == rewritten and new != result.text and new.startswith("Last week my sister bought a very ")
    assert " ".join(shaded) == new and "beautiful" in followed, (shaded, followed)
    assert kept[0] == "Rosa" and "name guard" in (kept[1] or "")
