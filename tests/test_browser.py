"""The real app in a real browser: ``streamlit run app.py`` driven by Playwright with Debian's Chromium."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BROWSER_MARKS, PATIENCE_MS, browser_page

from lab.attention.step_choices import choices, prefix_with
from lab.page.examples import EXAMPLES
from lab.page.output_words import output_words
from lab.whatif.forced_prefix import force
from translate.translator import DEFAULT_MODEL, Translator
from viz.heatmap import MIN_HEIGHT
from workshop.bench.app_latency import long_input
from workshop.bench.app_server import running_app, view_pill

RENDERED_VIEWS = """() => Array.from(document.querySelectorAll('.st-key-views [data-testid="stVegaLiteChart"]'))
    .filter(chart => chart.querySelector('canvas, svg')).length"""
SETTLED = "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0"
MAX_PAGE_BYTES = 5_000_000  # what one click may send to the page, whatever the input

pytestmark = BROWSER_MARKS


def translate_in(page, url: str, text: str) -> None:  # page: playwright's Page
    """Open the app, type ``text`` in the Spanish box and press Translate (what follows is each test's own)."""
    page.goto(url)
    box = page.get_by_role("textbox", name="Spanish sentence")
    box.wait_for(timeout=PATIENCE_MS)
    box.fill(text)
    page.get_by_role("button", name="Translate").click()


def test_translate_in_a_real_browser(app_url: str, tmp_path: Path) -> None:
    received = [0]  # bytes over the page's websocket: what Streamlit sends it
    with browser_page({"width": 1600, "height": 1200}) as (page, page_errors):
        page.on(
            "websocket",
            lambda ws: ws.on("framereceived", lambda data: received.__setitem__(0, received[0] + len(data))),
        )
        page.goto(app_url)
        box = page.get_by_role("textbox", name="Spanish sentence")
        box.wait_for(timeout=PATIENCE_MS)
        pages = [link.inner_text().strip() for link in page.locator('[data-testid="stSidebarNavLink"]').all()]
        box.fill("Hola mundo")
        page.get_by_role("button", name="Translate").click()
        output = page.locator('.st-key-translation [data-testid="stText"]').first
        output.wait_for(timeout=PATIENCE_MS)
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3", timeout=PATIENCE_MS)
        page.screenshot(path=str(tmp_path / "translate.png"), full_page=True)
        english = output.inner_text().strip()
        exceptions = page.locator('[data-testid="stException"]').count()

        box.fill(long_input(5000))  # the longest text the box takes
        before = received[0]
        page.get_by_role("button", name="Translate").click()
        page.get_by_label("Show the attention of sentence").wait_for(timeout=PATIENCE_MS)
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})()", timeout=PATIENCE_MS)
        long_bytes = received[0] - before
        page.screenshot(path=str(tmp_path / "long.png"), full_page=True)
        exceptions += page.locator('[data-testid="stException"]').count()
    assert pages == ["Translate", "Train"], pages  # named pages in the sidebar, not "app"
    assert english, "no English output"
    assert exceptions == 0, "Streamlit showed an exception box"
    assert not page_errors, page_errors
    assert (tmp_path / "translate.png").stat().st_size > 0
    assert 0 < long_bytes <= MAX_PAGE_BYTES, long_bytes


def test_clicking_a_cell_follows_its_token_in_all_three_views(app_url: str, tmp_path: Path) -> None:
    """Click a cell of the encoder map: its row's Spanish token becomes the one followed in every view."""
    with browser_page({"width": 1600, "height": 1000}) as (page, page_errors):
        translate_in(page, app_url, "El gato rojo 3.")
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})()", timeout=PATIENCE_MS)
        picker = page.locator(".st-key-follow input")  # the selectbox shows its value in an input
        before = picker.input_value()
        encoder = page.locator('.st-key-views [data-testid="stVegaLiteChart"]').first.locator("canvas, svg").first
        width = encoder.bounding_box()["width"]
        encoder.click(position={"x": width * 0.6, "y": 60})  # just below the title: a cell of an upper row
        page.wait_for_function(
            f"document.querySelector('.st-key-follow input').value !== {before!r}", timeout=PATIENCE_MS
        )
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})()", timeout=PATIENCE_MS)
        followed = picker.input_value()
        page.screenshot(path=str(tmp_path / "follow.png"), full_page=True)
        exceptions = page.locator('[data-testid="stException"]').count()
    assert "Spanish" not in before and followed.startswith("Spanish"), (before, followed)
    assert exceptions == 0 and not page_errors, page_errors


FIRST_SCREEN = {"width": 1600, "height": 1000}
BOXES = """() => Array.from(document.querySelectorAll('.st-key-views [data-testid="stVegaLiteChart"]'))
    .map(chart => { const r = chart.getBoundingClientRect(); return [r.top, r.bottom, r.height]; })"""
SCROLLED = """() => [window.scrollY, ...Array.from(document.querySelectorAll('[data-testid="stMain"], section.main'))
    .map(e => e.scrollTop)].reduce((a, b) => a + b, 0)"""


def test_the_translation_and_the_three_maps_fit_the_first_screen(shipped_app_url: str, tmp_path: Path) -> None:
    """After Translate at 1600×1000, the translation and all three maps are seen without scrolling, for the shipped
    model's largest guided example (the most rows and the most columns of any: a map's height grows with its rows,
    its width with its columns, and a row of maps too wide for the page wraps by design)."""
    translator = Translator.load(DEFAULT_MODEL)
    sizes = {e.source: (len(r.src_ids), len(r.best.tokens)) for e in EXAMPLES for r in [translator.translate(e.source)]}
    text = max(sizes, key=lambda source: max(sizes[source]))
    with browser_page(FIRST_SCREEN) as (page, _):
        translate_in(page, shipped_app_url, text)
        word = max(text.strip("¿?.").lower().split(), key=len)  # drawn as a column label once translated
        page.wait_for_function(
            f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})() && Array.from(document.querySelectorAll("
            f"'.st-key-views svg text')).some(label => label.textContent.includes({word!r}))",
            timeout=PATIENCE_MS,
        )
        page.screenshot(path=str(tmp_path / "first_screen.png"))
        translation = page.locator(".st-key-translation").bounding_box()
        charts, scrolled = page.evaluate(BOXES), page.evaluate(SCROLLED)
        exceptions = page.locator('[data-testid="stException"]').count()
    assert exceptions == 0 and scrolled == 0
    assert translation is not None and translation["y"] + translation["height"] <= FIRST_SCREEN["height"]
    assert len(charts) == 3, charts
    for top, bottom, height in charts:
        assert top >= 0 and bottom <= FIRST_SCREEN["height"], charts  # the whole chart, axes and all
        assert height >= MIN_HEIGHT, charts  # a real map, not a sliver
    assert all(max(sizes[text]) >= max(size) for size in sizes.values())  # the test means something


def test_in_step_by_step_the_next_button_and_the_top_5_chart_share_one_screen(app_url: str, tmp_path: Path) -> None:
    """Press Next and see the chart it changes: the button and the step's top-5 chart lie within one 1600×1000
    screen of each other."""
    with browser_page(FIRST_SCREEN) as (page, _):
        translate_in(page, app_url, "El gato rojo 3.")
        page.locator('.st-key-translation [data-testid="stText"]').first.wait_for(timeout=PATIENCE_MS)
        assert open_tab(page, "Step by step")
        chart = page.locator(".st-key-step_top canvas, .st-key-step_top svg").first
        chart.wait_for(timeout=PATIENCE_MS)
        next_button = page.locator(".st-key-step_next button")
        next_button.scroll_into_view_if_needed()
        page.wait_for_function(f"({SETTLED})()", timeout=PATIENCE_MS)
        boxes = [next_button.bounding_box(), chart.bounding_box()]
        page.screenshot(path=str(tmp_path / "steps.png"))
    assert all(b is not None for b in boxes), boxes
    top, bottom = min(b["y"] for b in boxes), max(b["y"] + b["height"] for b in boxes)
    assert bottom - top <= FIRST_SCREEN["height"], boxes


NEW_VIEWS = (
    "Where did it learn this?",
    "Compare two models",
    "Teach a correction",
    "Find the bad translations",
    "Behaviour tests",
    "Watch it learn",
)


def open_tab(page, name: str) -> bool:  # page: playwright's Page
    """Click the view called ``name`` in the row under the maps until it is the open one (a click during a rerun can
    be lost)."""
    pill = view_pill(page, name)
    for _ in range(5):
        pill.scroll_into_view_if_needed()
        pill.click()
        page.wait_for_function(SETTLED, timeout=PATIENCE_MS)
        page.wait_for_timeout(300)
        if pill.get_attribute("aria-checked") == "true":
            return True
    return False


def test_each_view_of_where_behaviour_comes_from_opens(app_url: str, tmp_path: Path) -> None:
    """Open each of the four views once in the browser after a translation: each draws without an exception."""
    opened = []
    with browser_page({"width": 1600, "height": 1000}) as (page, page_errors):
        translate_in(page, app_url, "El gato rojo 3.")
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})()", timeout=PATIENCE_MS)
        for name in NEW_VIEWS:
            opened.append(open_tab(page, name))
        exceptions = page.locator('[data-testid="stException"]').count()
    assert opened == [True] * len(NEW_VIEWS), opened
    assert exceptions == 0 and not page_errors, page_errors


LAPTOP = {"width": 1280, "height": 800}
MIN_CELLS_WIDTH = 180  # pixels of cells per map at least (a 1280-px screen drew Step by step's in 31)
THIRTEEN = "El perro negro duerme en la cama de mi hermana."  # 13 source and 13 output tokens (the shipped model)
# Each map: the box of its cells, and per axis the four screen corners of every label shown (its text box, turned as
# drawn; Vega keeps the labels it drops for overlap at opacity 0).
MAP_GEOMETRY = """(selector) => Array.from(document.querySelectorAll(selector))
    .map(svg => {
        const cells = svg.querySelector('.mark-rect.role-mark').getBoundingClientRect();
        const corners = text => {
            const b = text.getBBox(), m = text.getScreenCTM();
            return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
                .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
        };
        const axes = Array.from(svg.querySelectorAll('.role-axis')).map(axis =>
            Array.from(axis.querySelectorAll('.role-axis-label text'))
                .filter(text => text.getAttribute('opacity') !== '0').map(corners));
        const box = svg.getBoundingClientRect();
        return {cells: [cells.width, cells.height], box: [box.left, box.top, box.right, box.bottom], axes};
    })"""
MAIN_MAPS = '.st-key-views [data-testid="stVegaLiteChart"] svg'
STEP_MAPS = '[class*="st-key-step_map_"] [data-testid="stVegaLiteChart"] svg'

CUT_PLACEHOLDERS = """() => Array.from(document.querySelectorAll('[data-testid="stSidebar"] input[placeholder]'))
    .filter(input => { const style = getComputedStyle(input), pen = document.createElement('canvas').getContext('2d');
        pen.font = style.font;
        const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        return pen.measureText(input.placeholder).width > room; })
    .map(input => input.placeholder)"""


def overlap(a: list[list[float]], b: list[list[float]], slack: float = 0.5) -> bool:
    """Two convex quadrilaterals overlap (by more than ``slack`` pixels): no edge of either separates them."""
    for quad in (a, b):
        for (x1, y1), (x2, y2) in zip(quad, quad[1:] + quad[:1], strict=True):
            nx, ny = y1 - y2, x2 - x1  # the edge's normal
            pa, pb = [nx * x + ny * y for x, y in a], [nx * x + ny * y for x, y in b]
            norm = (nx * nx + ny * ny) ** 0.5 or 1.0
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= slack * norm:
                return False
    return True


def test_overlap_finds_crossing_boxes_only() -> None:
    square = [[0, 0], [10, 0], [10, 10], [0, 10]]
    assert overlap(square, [[5, 5], [15, 5], [15, 15], [5, 15]])
    assert not overlap(square, [[10, 0], [20, 0], [20, 10], [10, 10]])  # touching is not overlapping
    assert not overlap(square, [[12, 0], [22, 0], [22, 10], [12, 10]])
    assert overlap(square, [[5, -5], [12, 2], [5, 9], [-2, 2]])  # turned 45°


def assert_one_readable_row(maps: list[dict], n: int, screen: dict[str, int]) -> None:
    """``n`` maps side by side in one row within the screen, each MIN_CELLS_WIDTH px of cells at least, no two labels
    of one axis overlapping."""
    assert len(maps) == n, maps
    boxes = sorted(chart["box"] for chart in maps)
    assert max(b[1] for b in boxes) - min(b[1] for b in boxes) <= 2, boxes  # one row: the same top
    assert all(a[2] <= b[0] for a, b in itertools.pairwise(boxes)), boxes  # side by side, none over another
    assert boxes[-1][2] <= screen["width"], boxes
    for chart in maps:
        assert chart["cells"][0] >= MIN_CELLS_WIDTH, chart["cells"]
        for labels in chart["axes"]:
            crossing = [(i, j) for i in range(len(labels)) for j in range(i) if overlap(labels[i], labels[j])]
            assert not crossing, (crossing, labels)
        assert sum(len(labels) for labels in chart["axes"]) >= 10  # the labels were found: the test means something


@pytest.mark.parametrize("screen", [LAPTOP, FIRST_SCREEN], ids=["1280x800", "1600x1000"])
def test_the_maps_stand_side_by_side_and_readable_on_a_laptop_and_a_desktop(
    shipped_app_url: str, tmp_path: Path, screen: dict[str, int]
) -> None:
    """At 1280×800 and 1600×1000, for a 13-token sentence: the three maps in one row, each at least MIN_CELLS_WIDTH
    px of cells, no two labels of one axis overlapping, none past the screen's right edge; the same for Step by
    step's two maps. The first screen opens on the worked example, and no placeholder in the sidebar is cut."""
    result = Translator.load(DEFAULT_MODEL).translate(THIRTEEN)
    assert len(result.src_ids) == len(result.best.tokens) == 13  # the sentence the test is about
    with browser_page(screen) as (page, _):
        page.goto(shipped_app_url)
        page.wait_for_function(f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})()", timeout=PATIENCE_MS)
        first, cut = page.get_by_role("textbox", name="Spanish sentence").input_value(), page.evaluate(CUT_PLACEHOLDERS)
        page.get_by_role("textbox", name="Spanish sentence").fill(THIRTEEN)
        page.get_by_role("button", name="Translate").click()
        page.wait_for_function(
            f"({RENDERED_VIEWS})() >= 3 && ({SETTLED})() && Array.from(document.querySelectorAll("
            "'.st-key-views svg text')).some(label => label.textContent.includes('hermana'))",
            timeout=PATIENCE_MS,
        )
        page.wait_for_timeout(500)  # the charts fit their containers once more after the last rerun
        maps = page.evaluate(MAP_GEOMETRY, MAIN_MAPS)
        page.screenshot(path=str(tmp_path / f"maps_{screen['width']}.png"))
        assert open_tab(page, "Step by step")
        page.wait_for_function(
            f"document.querySelectorAll({STEP_MAPS!r}).length === 2 && ({SETTLED})()", timeout=PATIENCE_MS
        )
        page.wait_for_timeout(500)
        steps = page.evaluate(MAP_GEOMETRY, STEP_MAPS)
        page.locator(STEP_MAPS).first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"steps_{screen['width']}.png"))
    assert first == EXAMPLES[0].source
    assert not cut, cut
    assert_one_readable_row(maps, 3, screen)
    assert_one_readable_row(steps, 2, screen)


# --- the lab the other way round: checkpoints/en-es as the model ---

EN_ES = DEFAULT_MODEL.parent / "en-es"
MAP_TEXT = "() => Array.from(document.querySelectorAll('.st-key-views svg text')).map(t => t.textContent).join(' | ')"


@pytest.fixture
def en_es_app_url(tmp_path: Path) -> Iterator[str]:
    if not (EN_ES / "model.safetensors").exists():
        pytest.skip(f"{EN_ES} is not shipped")
    env = dict(os.environ, LAB_MODEL_DIR=str(EN_ES), LAB_RUNS_DIR=str(tmp_path / "runs"), LAB_THREADS="1")
    with running_app(env | {"OMP_NUM_THREADS": "1"}, tmp_path / "streamlit.log", timeout=60) as url:
        yield url


def test_english_to_spanish_translates_and_names_english_on_the_maps(en_es_app_url: str, tmp_path: Path) -> None:
    with browser_page({"width": 1600, "height": 1000}) as (page, page_errors):
        page.goto(en_es_app_url)
        box = page.get_by_role("textbox", name="English sentence")
        box.wait_for(timeout=PATIENCE_MS)
        box.fill("Where is the station?")
        page.get_by_role("button", name="Translate").click()
        output = page.locator(".st-key-translation")
        output.get_by_text("estación").first.wait_for(timeout=PATIENCE_MS)
        page.wait_for_function(f"({MAP_TEXT})().includes('English')", timeout=PATIENCE_MS)
        page.screenshot(path=str(tmp_path / "en-es.png"), full_page=True)
        labels, spanish = page.evaluate(MAP_TEXT), output.inner_text()
        exceptions = page.locator('[data-testid="stException"]').count()
    assert "¿Dónde está la estación?" in spanish, spanish
    assert "English" in labels and "Spanish" in labels and "station" in labels, labels
    assert exceptions == 0 and not page_errors, page_errors


BEAUTIFUL = "La semana pasada mi hermana compró un coche rojo muy bonito en el centro."
PILL_BACKGROUNDS = """(name) => Array.from(document.querySelectorAll('[role="radiogroup"]'))
    .filter(group => group.getAttribute('aria-label').startsWith(name))
    .flatMap(group => Array.from(group.querySelectorAll('button')))
    .map(pill => getComputedStyle(pill).backgroundColor)"""


def test_click_a_word_of_the_translation_and_pick_an_alternative(shipped_app_url: str, tmp_path: Path) -> None:
    """At 1280×800: every word of the translation is shaded, "beautiful" lists the model's alternatives, and picking
    the second keeps the words before it and lets the model write the rest: the output of that forced prefix."""
    translator = Translator.load(DEFAULT_MODEL)
    result = translator.translate(BEAUTIFUL)
    words = output_words(translator.tokenizer, result.best)
    beautiful = next(w for w in words if w.text == "beautiful")
    step = choices(translator.model, translator.tokenizer, result.src_ids, result.best.tokens)[beautiful.positions[0]]
    prefix = prefix_with(result.best.tokens, step.step, step.top_ids[1])
    expected = translator.tokenizer.decode_tgt(
        force(translator.model, result.src_ids, prefix, result.best.tokens).tokens
    )
    with browser_page(LAPTOP) as (page, page_errors):
        translate_in(page, shipped_app_url, BEAUTIFUL)
        clickable = page.get_by_role("radiogroup", name=re.compile("^Each word shaded"))
        clickable.get_by_role("radio", name="beautiful", exact=True).click()
        alternatives = page.get_by_role("radiogroup", name=re.compile("^Instead of “beautiful”"))
        alternatives.get_by_role("radio").nth(1).click()
        page.locator('.st-key-rewritten [data-testid="stText"]').wait_for(timeout=PATIENCE_MS)
        page.wait_for_function(SETTLED, timeout=PATIENCE_MS)
        shades = page.evaluate(PILL_BACKGROUNDS, "Each word shaded")
        listed = alternatives.get_by_role("radio").all_inner_texts()
        rewritten = page.locator('.st-key-rewritten [data-testid="stText"]').inner_text().strip()
        legend = page.get_by_text("Words this pale are").count()
        page.screenshot(path=str(tmp_path / "alternative.png"))
        exceptions = page.locator('[data-testid="stException"]').count()
    assert exceptions == 0 and not page_errors, page_errors
    assert len(shades) == len(words) and legend == 1
    shaded = [c for c, w in zip(shades, words, strict=True) if w.text != "beautiful"]  # the picked one is marked
    assert all(c not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)") for c in shaded), shades
    assert listed == [f"{piece.lstrip('▁')} · {p:.2f}" for piece, p in step.top], listed
    assert rewritten == expected and rewritten.startswith("Last week my sister bought a very ")
