"""How fast the lab answers: Python time for translate + attention maps, and Translate click -> charts in a browser.

1. Python: ``lab.explain.explain`` (greedy translation + a forced pass for the maps) of a 15-word sentence, and the
   chart specs of the three main views (frames + Altair ``to_dict``). Target: translate + maps under 100 ms.
2. Browser: ``streamlit run app.py`` driven by Playwright with Debian's Chromium; time from the Translate click to
   the English output and the three charts drawn, for new sentences (nothing cached) and for one repeated.

    python bench/app_latency.py                          # the shipped model (checkpoints/es-en)
    python bench/app_latency.py --model runs/es-en-small --repeats 50
    python bench/app_latency.py --model /tmp/tiny --no-browser
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import altair as alt  # noqa: E402

from lab.explain import explain, set_threads  # noqa: E402
from lab.maps import KIND_TITLES, KINDS, pick  # noqa: E402
from lab.views import map_view  # noqa: E402
from model.translate import DEFAULT_MODEL, Translator  # noqa: E402
from viz.heatmap import attention_frame, attention_heatmap  # noqa: E402

SENTENCE_15 = "Mañana mis amigos y yo vamos a ir a la playa con el perro grande."
BROWSER_SENTENCES = (
    SENTENCE_15,
    "El tren de la mañana llega siempre tarde porque hay mucha nieve en las montañas.",
    "Mi hermana quiere aprender a tocar la guitarra antes de su viaje a Madrid.",
)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip
VIEWS_DRAWN = """expected => {
    const code = document.querySelector('.st-key-translation code');
    const charts = Array.from(document.querySelectorAll('.st-key-views [data-testid="stVegaLiteChart"]'));
    const stale = document.querySelectorAll('.st-key-views [data-stale="true"]').length;
    return code && code.innerText.trim() === expected && stale === 0
        && charts.filter(c => c.querySelector('canvas, svg')).length >= 3;
}"""


def timed(fn: Callable[[], object], repeats: int, warmup: int = 2) -> list[float]:
    """Milliseconds of ``repeats`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms   (n={len(ms)})"


def python_latency(model: Path, repeats: int) -> None:
    translator = Translator.load(model)
    c = translator.model.config
    print(f"model: {model}  d_model={c.d_model} heads={c.n_heads} layers={c.n_encoder_layers}+{c.n_decoder_layers}")
    result = explain(translator, SENTENCE_15)
    maps = result.candidates[0].maps
    print(f"sentence: {len(SENTENCE_15.split())} words -> {len(maps.src)} source subwords, "
          f"{len(maps.tgt_out)} output tokens: {result.text!r}")  # fmt: skip
    print(f"python  translate + attention maps (greedy):  {summary(timed(lambda: explain(translator, SENTENCE_15), repeats))}"
          "   target < 100 ms")  # fmt: skip
    print(
        f"python  translate only (greedy):              {summary(timed(lambda: translator.translate(SENTENCE_15), repeats))}"
    )

    def three_views() -> None:
        for kind in KINDS:
            view = map_view(maps, kind)
            frame = attention_frame(pick(view.weights, 0, None), view.rows, view.cols, view.future)
            attention_heatmap(frame, KIND_TITLES[kind], "rows", "cols").to_dict()

    # Streamlit hands the DataFrame over as Arrow and puts only a reference in the spec: do the same here.
    alt.data_transformers.register("reference", lambda data: {"name": "table"})
    with alt.data_transformers.enable("reference"):
        print(f"python  three chart specs (frames + to_dict): {summary(timed(three_views, repeats))}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser_latency(model: Path, rounds: int) -> None:
    if not Path(CHROMIUM).exists():
        print("browser: skipped, /usr/bin/chromium is not installed (apt-get install -y chromium)")
        return
    from playwright.sync_api import sync_playwright

    expected = {s: explain(Translator.load(model), s).text for s in BROWSER_SENTENCES}
    port = free_port()
    env = dict(os.environ, LAB_MODEL_DIR=str(model), LAB_THREADS=os.environ.get("LAB_THREADS", "1"))
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
               str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]  # fmt: skip
    server = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.goto(url)
            box = page.get_by_label("Spanish sentence")
            box.wait_for(timeout=60_000)

            def click_to_charts(sentence: str) -> float:
                box.fill(sentence)
                start = time.perf_counter()
                page.get_by_role("button", name="Translate").click()
                page.wait_for_function(VIEWS_DRAWN, arg=expected[sentence], timeout=60_000)
                return (time.perf_counter() - start) * 1000

            first = click_to_charts(BROWSER_SENTENCES[0])  # includes loading the model into the server
            new = [click_to_charts(s) for s in BROWSER_SENTENCES[1:]]
            again = [click_to_charts(BROWSER_SENTENCES[i % len(BROWSER_SENTENCES)]) for i in range(rounds)]
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"browser Translate -> output + 3 charts, first click (loads the model):  {first:7.1f} ms")
    print(f"browser Translate -> output + 3 charts, new sentence:   {summary(new)}")
    print(f"browser Translate -> output + 3 charts, cached result:  {summary(again)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL))
    parser.add_argument("--repeats", type=int, default=20, help="timed Python calls per figure")
    parser.add_argument("--rounds", type=int, default=3, help="timed browser clicks on cached sentences")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    set_threads(os.environ.get("LAB_THREADS"))  # like the app: 1 thread unless LAB_THREADS says otherwise
    python_latency(args.model, args.repeats)
    if not args.no_browser:
        browser_latency(args.model, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
