"""Screenshots of every view of the lab at 1600×1000 (the first screen at 1280×800 too), for a note or the docs.

Starts ``streamlit run app.py`` on a free port (the shipped model unless LAB_MODEL_DIR says otherwise), drives
Debian's Chromium with Playwright and saves one PNG per view: the three maps for the first guided example, a
followed token, the all-heads grid, the arithmetic of one weight, the positional encoding, the architecture, the
What if tab, decoding step by step with beam search, the alignment tab for a gold sentence, and the Train page.
Prints the files it wrote.

    python -m workshop bench screenshots --out /tmp/shots
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from lab.page.direction import languages
from lab.page.examples import EXAMPLES
from translate.translator import DEFAULT_MODEL
from views.whatif_tab import tools
from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, running_app, view_pill

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # reported in main
    PlaywrightTimeout = TimeoutError

PATIENCE_MS = 240_000  # a loaded 2-core machine: the first translation alone can take half a minute
VIEWPORT = {"width": 1600, "height": 1000}
SMALL_VIEWPORT = {"width": 1280, "height": 800}
DRAWN = """() => {
    const running = document.querySelector('[data-testid="stStatusWidget"]')?.innerText.includes('Running');
    const stale = document.querySelectorAll('[data-stale="true"]').length;
    const charts = Array.from(document.querySelectorAll('[data-testid="stVegaLiteChart"]')).filter(c => c.offsetParent);
    return !running && stale === 0 && charts.every(c => c.querySelector('canvas, svg'));
}"""


class Shooter:
    """The page and the small moves a learner makes on it; ``shot`` saves the viewport as NAME.png."""

    def __init__(self, page, out: Path) -> None:  # page: playwright's Page
        self.page, self.out, self.written = page, out, []

    def settle(self) -> None:
        time.sleep(1.0)  # let the rerun a click triggers begin
        self.page.wait_for_function(DRAWN, timeout=PATIENCE_MS)
        time.sleep(1.0)  # Vega draws, fonts settle

    def pick(self, key: str, option: str | None = None) -> None:
        """Open the selectbox with this key and click the option containing ``option`` (the first when None)."""
        for attempt in range(3):  # a late rerun can redraw the box and close its list: open it again
            self.page.locator(f".st-key-{key} button[aria-label='Open']").click()
            options = self.page.get_by_role("option")
            try:
                (options.first if option is None else options.filter(has_text=option).first).click(timeout=20_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
                self.settle()
        self.settle()

    def translate(self) -> None:
        self.page.get_by_role("button", name="Translate").click()
        self.page.locator('.st-key-translation [data-testid="stText"]').first.wait_for(timeout=PATIENCE_MS)
        self.settle()

    def tab(self, name: str) -> None:
        view_pill(self.page, name).click()
        self.settle()

    def shot(self, name: str, top: str) -> None:
        """Scroll ``top`` (a locator string) to the top of the window and save what a 1600×1000 window shows."""
        below_header = "e => { e.style.scrollMarginTop = '70px'; e.scrollIntoView() }"
        self.page.locator(top).first.evaluate(below_header)
        self.page.mouse.move(5, VIEWPORT["height"] - 5)  # no chart's hover toolbar over the text
        time.sleep(0.5)
        path = self.out / f"{name}.png"
        self.page.screenshot(path=str(path))
        errors = self.page.locator('[data-testid="stException"]').count()
        self.written.append(f"{path}" + (f"  ({errors} exception box(es) on the page)" if errors else ""))


def what_if_shots(s: Shooter, page) -> None:  # page: playwright's Page
    """One shot per What if tool."""
    s.tab("What if")
    for i, tool in enumerate(tools(languages(DEFAULT_MODEL))):
        if i:
            page.locator(".st-key-whatif_tool").get_by_text(tool).click()
            s.settle()
        s.shot(f"06c_what_if_{i + 1}_{tool.split()[0].lower()}", "[role='tablist']")


def take(url: str, out: Path) -> list[str]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url)
            page.get_by_role("button", name="Translate").wait_for(timeout=PATIENCE_MS)
            s = Shooter(page, out)
            s.pick("example", EXAMPLES[0].source)
            s.translate()
            s.shot("01_translate_result", "h1")
            page.set_viewport_size(SMALL_VIEWPORT)  # the smaller screen: at least the translation and cross-attention
            s.settle()
            s.shot("01_translate_result_1280x800", "h1")
            page.set_viewport_size(VIEWPORT)
            s.settle()
            s.shot("02_three_views", ".st-key-views")
            s.pick("follow", "negro")  # a Spanish token: lit in the encoder map and as a column of cross-attention
            s.shot("03_follow_token", ".st-key-follow")
            s.tab("All heads")
            s.shot("04_all_heads", "[role='tablist']")
            s.tab("Arithmetic of a weight")
            s.shot("05_arithmetic", "[role='tablist']")
            s.tab("Positional encoding")
            s.shot("06_positional", "[role='tablist']")
            s.tab("Architecture")
            s.shot("06b_architecture", "[role='tablist']")
            what_if_shots(s, page)
            page.locator('[data-testid="stSidebar"]').get_by_text("beam search").click()
            s.settle()
            s.translate()
            s.tab("Step by step")
            page.get_by_role("button", name="Next →").click()  # step 2 predicts "black", which looks at "negro"
            s.settle()
            s.shot("07_step_by_step_beam", ".st-key-step")
            if page.locator(".st-key-gold").count():
                s.pick("gold")
                s.translate()
            s.tab("Alignment")
            s.shot("08_alignment", "[role='tablist']")
            if page.locator(".st-key-gold_score").count():
                s.shot("09_alignment_gold_score", ".st-key-gold_score")
            page.locator('[data-testid="stSidebarNavLink"]').filter(has_text="Train").click()
            page.get_by_text("Train on your own corpus").wait_for(timeout=PATIENCE_MS)
            s.settle()
            s.shot("10_train", "h1")
            s.shot("11_train_runs", "h2:has-text('3. Runs')")
            return s.written
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop bench screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs (created)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is not installed (apt-get install -y chromium)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LAB_THREADS=os.environ.get("LAB_THREADS", "1"), OMP_NUM_THREADS="1")
    with running_app(env, args.out / "streamlit.log") as url:
        for line in take(url, args.out):
            print(line)
    return 0
