"""``app_latency --against REV``: this checkout's page and git revision REV's, served side by side and timed in
turns (A B, then B A), so that the host's drift, which moves one page's figures by half from one hour to the next,
falls on both alike. REV is checked out into a temporary git worktree (its app.py and its own modules; the same
Python, model and browser); each case prints both medians and their ratio."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, REPO, running_app


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached git worktree of ``rev`` in a temporary folder, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="page_ab_")) / "repo"
    added = subprocess.run(["git", "worktree", "add", "--detach", str(folder), rev], cwd=REPO, capture_output=True)
    if added.returncode != 0:
        shutil.rmtree(folder.parent, ignore_errors=True)
        raise SystemExit(f"--against {rev}: git could not check it out: {added.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=REPO, capture_output=True)
        shutil.rmtree(folder.parent, ignore_errors=True)


def side_by_side(model: Path, rev: str, rounds: int, example: str, expected: dict[str, str], drawn: str) -> None:
    """New user's first screen, a click on a new and on a cached sentence, both pages in turns (``expected``: each
    sentence's translation; ``drawn``: the browser-side wait for a translation and its three maps)."""
    from playwright.sync_api import sync_playwright

    env = dict(os.environ, LAB_MODEL_DIR=str(model), LAB_THREADS=os.environ.get("LAB_THREADS", "1"))
    times: dict[str, dict[str, list[float]]] = {"HEAD": {}, rev: {}}
    with ExitStack() as stack, sync_playwright() as p:
        urls = {"HEAD": stack.enter_context(running_app(env))}
        urls[rev] = stack.enter_context(running_app(env, repo=stack.enter_context(worktree(rev))))
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        pages = {name: opened(browser, url, example, drawn) for name, url in urls.items()}

        def click(name: str, sentence: str) -> float:
            page = pages[name]
            page.get_by_role("textbox", name="Spanish sentence").fill(sentence)
            return timed(lambda: page.get_by_role("button", name="Translate").click(), page, drawn, expected[sentence])

        def first_screen(name: str) -> float:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto("about:blank")
            spent = timed(lambda: page.goto(urls[name]), page, drawn, example)
            page.close()
            return spent

        sentences = list(expected)
        cases: list[tuple[str, Callable[[str, int], float]]] = [
            ("new sentence", lambda name, i: click(name, sentences[i % len(sentences)])),
            ("cached sentence", lambda name, i: click(name, sentences[i % len(sentences)])),
            ("new user, first screen", lambda name, i: first_screen(name)),
        ]
        for case, act in cases:
            for i in range(len(sentences) if case == "new sentence" else rounds):
                for name in list(times)[:: 1 if i % 2 == 0 else -1]:
                    times[name].setdefault(case, []).append(act(name, i))
        browser.close()
    for case, _ in cases:
        head, other = (statistics.median(times[name][case]) for name in times)
        print(
            f"side by side {case + ':':24} HEAD {head:7.0f} ms   {rev} {other:7.0f} ms   HEAD / {rev} {head / other:.2f}"
        )


def opened(browser: Any, url: str, example: str, drawn: str) -> Any:
    """A page on ``url`` with the first screen drawn (the server warm)."""
    page = browser.new_page(viewport={"width": 1600, "height": 1200})
    page.goto(url)
    page.wait_for_function(drawn, arg=example, timeout=120_000)
    return page


def timed(act: Callable[[], object], page: Any, drawn: str, expected: str) -> float:
    start = time.perf_counter()
    act()
    page.wait_for_function(drawn, arg=expected, timeout=60_000)
    return 1000 * (time.perf_counter() - start)
