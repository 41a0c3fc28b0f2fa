"""An English-first corpus from upload to translation, in a real browser (``streamlit run app.py``, Playwright,
Debian's Chromium): the Train page proposes English → Spanish from the text, a tiny run trains to its end, and the
Translate page then speaks of English → Spanish."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BROWSER_MARKS, PATIENCE_MS, browser_page, idle

from jobs import control

ENGLISH_FIRST = (
    ("See you Monday at school.", "Nos vemos el lunes en la escuela."),
    ("Where is the train station?", "¿Dónde está la estación de tren?"),
    ("I like reading books at night.", "Me gusta leer libros por la noche."),
    ("She doesn't speak English.", "Ella no habla inglés."),
    ("The weather is nice today.", "Hoy hace buen tiempo."),
)

pytestmark = BROWSER_MARKS


def test_an_english_first_corpus_trains_an_english_to_spanish_model(app_url: str, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    corpus = tmp_path / "en-es.tsv"
    pairs = [f"{en[:-1]} {i}{en[-1]}\t{es[:-1]} {i}{es[-1]}" for i in range(60) for en, es in ENGLISH_FIRST]
    corpus.write_text("\n".join(pairs) + "\n", encoding="utf-8")  # 300 pairs, English first
    with browser_page({"width": 1400, "height": 2400}) as (page, page_errors):
        page.goto(app_url)  # the Translate page, then Train from the sidebar, as a user goes
        page.get_by_role("heading", name="Spanish → English: inside a Transformer").wait_for(timeout=PATIENCE_MS)
        idle(page)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="Train").click()
        page.get_by_text("Train on your own corpus").wait_for(timeout=PATIENCE_MS)
        idle(page)
        page.locator("input[type=file]").first.set_input_files(str(corpus))
        page.get_by_text("Validation report").wait_for(timeout=PATIENCE_MS)
        idle(page)
        proposed = [page.locator(f".st-key-{side}_lang input").input_value() for side in ("source", "target")]
        steps = page.get_by_role("spinbutton", name="Steps")
        steps.fill("20")
        steps.press("Enter")
        idle(page)
        name = page.get_by_label("Run name (letters, digits, - and _)")
        name.fill("en-es")
        name.press("Enter")
        idle(page)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("Started run").wait_for(timeout=PATIENCE_MS)
        page.get_by_text("Test BLEU (greedy)").wait_for(timeout=300_000)  # the live panel saw the run finish
        idle(page)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="Translate").click()
        page.get_by_role("heading", name="Spanish → English: inside a Transformer").wait_for(timeout=PATIENCE_MS)
        idle(page)
        page.locator(".st-key-model").click()
        page.get_by_role("option", name="run: en-es").click()
        page.get_by_role("heading", name="English → Spanish: inside a Transformer").wait_for(timeout=PATIENCE_MS)
        try:  # the heading comes first; the box below it may be drawn a moment later
            page.get_by_role("textbox", name="English sentence").wait_for(timeout=PATIENCE_MS)
            box_shown = True
        except sync_api.TimeoutError:
            box_shown = False
        page.screenshot(path=str(tmp_path / "english-first.png"), full_page=True)
        exceptions = page.locator('[data-testid="stException"]').count()
    assert proposed == ["English (en)", "Spanish (es)"], proposed
    assert control.job_status(tmp_path / "runs" / "en-es").state == "finished"
    assert box_shown, "the input is not labelled “English sentence”"
    assert exceptions == 0, "Streamlit showed an exception box"
    assert not page_errors, page_errors
