"""Streamlit's own floor for ``app_latency``: a bare page with the text box, a translation and the same three map
specs the lab sends (``views.maps.map_spec``), nothing else: what a new user's first screen and a click cost in
this browser on this host before the lab adds anything (each click shows the next sentence's translation and maps,
as the lab's cached click does). The lab's figures beside it say what is the lab's."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.attention.sentence_maps import KINDS
from lab.attention.translate_with_maps import maps_of, translate_text
from lab.page.direction import languages
from translate.translator import Translator
from views.maps import map_spec
from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, running_app
from workshop.bench.click_profile import browser_probe

PAGE = """import os, pickle
import streamlit as st
st.set_page_config(layout="wide")
shown = pickle.loads(open(os.environ["FLOOR_SPECS"], "rb").read())  # [(translation, its three specs)]
box, beside = st.columns(2)
box.text_area("Spanish sentence")
box.button("Translate")
st.session_state.runs = st.session_state.get("runs", 0) + 1
box.caption(f"run {st.session_state.runs}")  # what the bench waits for after a click
text, specs = shown[(st.session_state.runs - 1) % len(shown)]
beside.container(key="translation").text(text)
with st.container(key="views"):
    for column, spec in zip(st.columns(3), specs):
        column.vega_lite_chart(spec, width="stretch")
"""


def floor_parts(
    model: Path, sentences: tuple[str, ...], rounds: int, first_screen: Callable[..., dict[str, float]]
) -> dict[str, list[dict[str, float]]]:
    """{"floor: first screen": [...], "floor: click": [...]}: the bare page's profiles, as ``first_screen`` (the
    lab's own measure of a new user) and a click on its Translate (the next of ``sentences``, its maps drawn)."""
    from playwright.sync_api import sync_playwright

    translator, langs, shown = Translator.load(model), languages(model), []
    for sentence in sentences:
        piece = translate_text(translator, sentence).sentences[0]
        maps = maps_of(translator, piece.src_ids, piece.best.tokens)
        specs = [map_spec(maps, kind, maps.n_layers(kind) - 1, None, True, None, langs, True) for kind in KINDS]
        shown.append((piece.best.text, specs))
    folder = Path(tempfile.mkdtemp(prefix="floor_page_"))
    (folder / "page.py").write_text(PAGE, encoding="utf-8")
    (folder / "specs.pkl").write_bytes(pickle.dumps(shown))
    env = dict(os.environ, FLOOR_SPECS=str(folder / "specs.pkl"))
    parts: dict[str, list[dict[str, float]]] = {"floor: first screen": [], "floor: click": []}
    with running_app(env, script=str(folder / "page.py")) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        for _ in range(rounds):
            parts["floor: first screen"].append(first_screen(browser, url, shown[0][0]))
        page = browser.new_page(viewport={"width": 1600, "height": 1200})
        with browser_probe(page) as measure:
            page.goto(url)
            page.get_by_role("button", name="Translate").wait_for(timeout=60_000)
            settled(page, 1)()
            for run in range(2, rounds + 2):
                page.wait_for_timeout(300)
                click = page.get_by_role("button", name="Translate").click
                parts["floor: click"].append(measure(click, settled(page, run)))
        browser.close()
    return parts


def settled(page: Any, run: int) -> Callable[[], object]:
    """A wait for the page's ``run``-th script run drawn: its count shown, nothing stale, the three maps drawn."""
    return lambda: page.wait_for_function(
        """run => Array.from(document.querySelectorAll('[data-testid="stCaptionContainer"]'))
            .some(c => c.innerText.trim() === `run ${run}`)
            && document.querySelectorAll('[data-stale="true"]').length === 0
            && document.querySelectorAll('[data-testid="stVegaLiteChart"] canvas, '
            + '[data-testid="stVegaLiteChart"] svg').length >= 3""",
        arg=run,
        timeout=60_000,
    )
