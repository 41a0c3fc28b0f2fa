"""How fast the lab answers: Python time for translate + attention maps, and Translate click -> charts in a browser.

1. Python: ``lab.attention.translate_with_maps.translate_text`` (greedy translation) plus the forced pass for the
   maps of a 15-word sentence, and the chart specs of the three main views (frames + Altair ``to_dict``). Target:
   translate + maps < 100 ms.
2. A 5,000-character input (the text box's limit), as sentences and as one run of words without punctuation:
   Python time, and the chart bytes the page sends per run (spec + Arrow data of every chart, measured with
   Streamlit's AppTest on the real page, every tab opened in turn). Target: at most 5 MB.
3. Browser: ``streamlit run app.py`` driven by Playwright with Debian's Chromium; time from the Translate click to
   the English output and the three charts drawn, for new sentences (nothing cached), for one repeated, and for
   the 5,000-character input (target at most 3 s), with the bytes the page received over its websocket; and a
   change of the cross-attention map's layer.
4. The profile of one click (``click_profile``), each part also as a multiple of the computation of 1. (translate
   + maps + the three specs): on the server, the page's script run and each view's share, the cache look-ups and
   the charts' serialisation; in the browser, messages and bytes per click, and Chromium's main-thread time in
   Vega (parse, compile, render; per chart), Arrow, Streamlit and React, layout and style.
5. Streamlit's floor (``floor_page``): a bare page with the text box, a translation and the same three map specs,
   timed the same way (a new user; a click to the next sentence): what the lab adds is the difference.
6. ``--against REV`` (``page_ab``): this checkout's page and git revision REV's, served side by side and timed in
   turns (new user, new and cached sentence), with their ratio: a change's effect, free of the host's drift.

    python -m workshop bench app_latency --repeats 10 --rounds 5  # the issue's figures, both in one run
    python -m workshop bench app_latency --profile-only           # the profile, without the 5,000-character figures
    python -m workshop bench app_latency --against HEAD~3 --rounds 10  # this page and HEAD~3's, timed in turns
    python -m workshop bench app_latency                          # the shipped model (checkpoints/es-en)
    python -m workshop bench app_latency --model runs/es-en-small --repeats 50
    python -m workshop bench app_latency --model /tmp/tiny --no-browser
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt

from lab.attention.map_views import map_view
from lab.attention.sentence_maps import KIND_TITLES, KINDS, pick
from lab.attention.translate_with_maps import maps_of, set_threads, translate_text
from lab.page.direction import languages
from lab.page.examples import examples_for
from translate.translator import DEFAULT_MODEL, Translator
from viz.heatmap import attention_frame, attention_heatmap
from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, REPO, running_app, view_pill
from workshop.bench.click_profile import browser_probe, median_parts, print_browser, print_server, server_profile
from workshop.bench.floor_page import floor_parts
from workshop.bench.page_ab import side_by_side
from workshop.bounds import MAX_REPEATS, within

SENTENCE_15 = "Mañana mis amigos y yo vamos a ir a la playa con el perro grande."
BROWSER_SENTENCES = (
    SENTENCE_15,
    "El tren de la mañana llega siempre tarde porque hay mucha nieve en las montañas.",
    "Mi hermana quiere aprender a tocar la guitarra antes de su viaje a Madrid.",
)
PARAGRAPH = (  # varied everyday Spanish, cycled to make a long input
    "Ayer por la tarde fuimos al mercado del barrio para comprar fruta, pan y un poco de queso.",
    "¿Sabes a qué hora sale el último autobús hacia el centro de la ciudad?",
    "Mi abuela siempre dice que el secreto de una buena sopa es tener paciencia.",
    "Los niños jugaban en el parque mientras sus padres hablaban del trabajo.",
    "No encuentro mis llaves; creo que las dejé encima de la mesa de la cocina.",
    "El médico me recomendó caminar media hora cada día y beber más agua.",
    "¡Qué sorpresa verte aquí después de tantos años!",
    "Cuando llegamos al hotel, la recepcionista nos dio una habitación con vistas al mar.",
    "Tom quiere aprender a tocar el piano, pero no tiene tiempo para practicar.",
    "La biblioteca cierra a las ocho, así que tenemos que darnos prisa.",
    "Me gustaría reservar una mesa para cuatro personas el sábado por la noche.",
    "Este invierno ha hecho mucho frío y ha nevado en las montañas.",
)
TAB_DRAWN = """() => {
    const panel = document.querySelector('.st-key-open_view');
    const stale = document.querySelectorAll('[data-stale="true"]').length;
    return panel && stale === 0 && (panel.querySelector('[data-testid="stVegaLiteChart"] canvas, '
        + '[data-testid="stVegaLiteChart"] svg, [data-testid="stAlert"]') !== null);
}"""
VIEWS_DRAWN = """expected => {
    const output = document.querySelector('.st-key-translation [data-testid="stText"]');
    const charts = Array.from(document.querySelectorAll('.st-key-views [data-testid="stVegaLiteChart"]'));
    const stale = document.querySelectorAll('.st-key-views [data-stale="true"]').length;
    return output && output.innerText.trim() === expected && stale === 0
        && charts.filter(c => c.querySelector('canvas, svg')).length >= 3;
}"""
LAYER_DRAWN = """subtitle => {
    const cross = Array.from(document.querySelectorAll('.st-key-views [data-testid="stVegaLiteChart"]'))[2];
    const stale = document.querySelectorAll('.st-key-views [data-stale="true"]').length;
    return cross && stale === 0 && Array.from(cross.querySelectorAll('text')).some(t => t.textContent.includes(subtitle));
}"""


def long_input(chars: int = 5000, punctuation: bool = True) -> str:
    """``chars`` characters of Spanish (the text box's limit is 5,000); without punctuation: one long run of words
    with no sentence end to split at, the worst case for the page."""
    sentences = PARAGRAPH if punctuation else ["".join(c for c in s.lower() if c not in ".,;:¿?¡!") for s in PARAGRAPH]
    text = sentences[0]
    while len(text) < chars:
        text += " " + sentences[len(text) % len(sentences)]
    return text[:chars]


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


def python_latency(model: Path, repeats: int) -> float:
    """Prints the Python figures; returns the median ms of translate + maps + the three specs (the computation)."""
    translator = Translator.load(model)
    c = translator.model.config
    print(f"model: {model}  d_model={c.d_model} heads={c.n_heads} layers={c.n_encoder_layers}+{c.n_decoder_layers}")
    result = translate_text(translator, SENTENCE_15)
    piece = result.sentences[0]
    maps = maps_of(translator, piece.src_ids, piece.best.tokens)
    print(
        f"sentence: {len(SENTENCE_15.split())} words -> {len(maps.src)} source subwords, "
        f"{len(maps.tgt_out)} output tokens: {result.text!r}"
    )

    def translate_and_maps() -> None:
        sentence = translate_text(translator, SENTENCE_15).sentences[0]
        maps_of(translator, sentence.src_ids, sentence.best.tokens)

    computation = timed(translate_and_maps, repeats)
    print(f"python  translate + attention maps (greedy):  {summary(computation)}   target < 100 ms")
    print(
        f"python  translate only (greedy):              {summary(timed(lambda: translator.translate(SENTENCE_15), repeats))}"
    )

    def three_views() -> None:
        for kind in KINDS:
            view = map_view(maps, kind)
            frame = attention_frame(pick(view.weights, 0, None), view.rows, view.cols, view.future, view.inputs)
            attention_heatmap(frame, KIND_TITLES[kind], "rows", "cols").to_dict()

    # Streamlit hands the DataFrame over as Arrow and puts only a reference in the spec: do the same here.
    alt.data_transformers.register("reference", lambda data: {"name": "table"})
    with alt.data_transformers.enable("reference"):
        spec_ms = timed(three_views, repeats)
    print(f"python  three chart specs (frames + to_dict): {summary(spec_ms)}")
    return statistics.median(computation) + statistics.median(spec_ms)


def long_input_python(model: Path, repeats: int) -> None:
    """Python time of a 5,000-character input: split, translate every piece (batched), maps of the largest piece."""
    translator = Translator.load(model)
    for punctuation in (True, False):
        text = long_input(5000, punctuation)
        result = translate_text(translator, text)
        largest = max(result.sentences, key=lambda s: len(s.src_ids) * len(s.best.tokens))
        cut = sum(c.truncated for s in result.sentences for c in s.candidates)
        kind = "sentences" if punctuation else "no punctuation"
        print(
            f"python  5,000 characters ({kind}): {len(result.sentences)} pieces, largest {len(largest.src_ids)} "
            f"subwords -> {len(largest.best.tokens)} tokens, {cut} outputs cut at the length limit"
        )
        print(
            f"python    translate every piece (greedy, batched): {summary(timed(lambda t=text: translate_text(translator, t), max(1, repeats // 10), 1))}"
        )
        print(
            f"python    maps of the largest piece:               {summary(timed(lambda s=largest: maps_of(translator, s.src_ids, s.best.tokens), repeats))}"
        )


def page_chart_bytes(model: Path) -> None:
    """Chart bytes per page run for a 5,000-character input, on the real page (AppTest), every tab opened in turn."""
    from streamlit.testing.v1 import AppTest

    os.environ["LAB_MODEL_DIR"] = str(model)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300).run()
    for punctuation in (True, False):
        at.text_area(key="source").set_value(long_input(5000, punctuation))
        at.button(key="translate").click().run()
        pickers = [box for box in at.selectbox if box.key == "sentence"]
        n = len(pickers[0].options) if pickers else 1
        runs = {"translate click": sum(c.proto.ByteSize() for c in at.get("vega_lite_chart"))}
        longest = int(at.main.get_by_key("sentences").dataframe[0].value["Spanish"].str.len().idxmax()) if n > 1 else 0
        for sentence in sorted({0, longest}):
            if n > 1:
                at.selectbox(key="sentence").select_index(sentence).run()
            for tab in ("All heads", "Step by step", "Positional encoding", "Alignment"):
                at.session_state["view"] = tab
                at.run()
                runs[f"{tab} (piece {sentence + 1})"] = sum(c.proto.ByteSize() for c in at.get("vega_lite_chart"))
        worst = max(runs, key=runs.get)
        kind = "sentences" if punctuation else "no punctuation"
        print(
            f"page    5,000 characters ({kind}), {n} pieces: chart bytes on the translate click "
            f"{runs['translate click']:,}; largest page run {runs[worst]:,} ({worst})   target <= 5,000,000"
        )


def browser_latency(model: Path, rounds: int, computation_ms: float) -> None:
    if not Path(CHROMIUM).exists():
        print("browser: skipped, /usr/bin/chromium is not installed (apt-get install -y chromium)")
        return
    from playwright.sync_api import sync_playwright

    long_text, worst_text = long_input(5000), long_input(5000, punctuation=False)
    translator = Translator.load(model)
    expected = {s: translate_text(translator, s).text for s in (*BROWSER_SENTENCES, long_text, worst_text)}
    example = translate_text(translator, examples_for(languages(model))[0].source).text  # the first screen's
    env = dict(os.environ, LAB_MODEL_DIR=str(model), LAB_THREADS=os.environ.get("LAB_THREADS", "1"))
    parts: dict[str, list[dict[str, float]]] = {}  # case → the profile of each of its clicks
    with running_app(env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1200})
        with browser_probe(page) as measure:
            page.goto(url)
            box = page.get_by_role("textbox", name="Spanish sentence")
            box.wait_for(timeout=60_000)

            def click_to_charts(sentence: str, case: str) -> None:
                box.fill(sentence)
                parts.setdefault(case, []).append(
                    measure(
                        lambda: page.get_by_role("button", name="Translate").click(),
                        lambda: page.wait_for_function(VIEWS_DRAWN, arg=expected[sentence], timeout=60_000),
                    )
                )

            def layer_change(layer: int) -> None:
                page.locator(".st-key-cross_layer").click()  # the list opens; the clock starts at the pick
                option = page.get_by_role("option", name=f"layer {layer + 1}", exact=True)
                option.wait_for(timeout=60_000)
                drawn = lambda: page.wait_for_function(LAYER_DRAWN, arg=f"layer {layer + 1},", timeout=60_000)  # noqa: E731
                parts.setdefault("layer change", []).append(measure(option.click, drawn))

            click_to_charts(BROWSER_SENTENCES[0], "first click")  # includes loading the model into the server
            for sentence in BROWSER_SENTENCES[1:]:
                click_to_charts(sentence, "new sentence")
            for i in range(rounds):
                click_to_charts(BROWSER_SENTENCES[i % len(BROWSER_SENTENCES)], "cached sentence")
            for i in range(rounds):
                layer_change(i % translator.model.config.n_decoder_layers)
            click_to_charts(long_text, "5,000 characters")
            grid = measure(
                lambda: view_pill(page, "All heads").click(),
                lambda: page.wait_for_function(TAB_DRAWN, timeout=60_000),
            )
            parts["open 'All heads'"] = [grid]
            view_pill(page, "Alignment").click()
            page.wait_for_function(TAB_DRAWN, timeout=60_000)
            click_to_charts(worst_text, "5,000 characters, no punctuation")
        parts["new user, first screen"] = [first_screen(browser, url, example) for _ in range(rounds)]
        browser.close()
    parts |= floor_parts(model, (examples_for(languages(model))[0].source, *BROWSER_SENTENCES), rounds, first_screen)
    print_browser_summary(parts)
    print_browser({case: median_parts(runs) for case, runs in parts.items()}, computation_ms)


def first_screen(browser: Any, url: str, example: str) -> dict[str, float]:
    """A new user on the warm server, on a laptop's screen: from opening the page to the box and the worked
    example's three maps drawn (``browser``: Playwright's Browser)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    with browser_probe(page) as measure:
        page.goto("about:blank")
        opened = measure(
            lambda: page.goto(url), lambda: page.wait_for_function(VIEWS_DRAWN, arg=example, timeout=60_000)
        )
    page.close()
    return opened


BROWSER_LINES = (  # (case, what it times, its target)
    ("first click", "Translate -> output + 3 charts, first click (loads the model)", ""),
    ("new sentence", "Translate -> output + 3 charts, new sentence", ""),
    ("cached sentence", "Translate -> output + 3 charts, cached result", ""),
    ("layer change", "cross-attention layer changed -> 3 charts", ""),
    ("new user, first screen", "new user on the warm server -> box + example's 3 charts", "target 1.5 s"),
    ("5,000 characters", "Translate -> output + 3 charts, 5,000 characters", "target <= 3 s, <= 5 MB"),
    ("open 'All heads'", "then open 'All heads' -> grid drawn", ""),
    ("5,000 characters, no punctuation", "Translate -> output + 3 charts, 5,000 characters without punctuation", ""),
    ("floor: first screen", "floor: a bare Streamlit page, a translation and 3 maps: new user", "Streamlit's own"),
    ("floor: click", "floor: the same page, click -> the next translation and 3 maps", "Streamlit's own"),
)


def print_browser_summary(parts: dict[str, list[dict[str, float]]]) -> None:
    for case, what, target in BROWSER_LINES:
        runs = parts[case]
        ms = [run["click → maps drawn"] for run in runs]
        received = statistics.median(run["bytes received"] for run in runs)
        print(f"browser {what + ':':68} {summary(ms)}, {received:,.0f} bytes received   {target}".rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop bench app_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL))
    parser.add_argument("--repeats", type=int, default=20, help="timed Python calls per figure")
    parser.add_argument("--rounds", type=int, default=3, help="timed browser clicks on cached sentences")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--profile-only", action="store_true", help="leave out the 5,000-character Python figures")
    parser.add_argument("--against", metavar="REV", help="only this page and git revision REV's, side by side")
    args = parser.parse_args(argv)
    within("--repeats", args.repeats, 1, MAX_REPEATS, "timed calls")
    within("--rounds", args.rounds, 1, MAX_REPEATS, "timed clicks")
    set_threads(os.environ.get("LAB_THREADS"))  # like the app: 1 thread unless LAB_THREADS says otherwise
    computation = python_latency(args.model, args.repeats)
    if args.against:
        translator = Translator.load(args.model)
        expected = {s: translate_text(translator, s).text for s in BROWSER_SENTENCES}
        example = translate_text(translator, examples_for(languages(args.model))[0].source).text
        side_by_side(args.model, args.against, args.rounds, example, expected, VIEWS_DRAWN)
        return 0
    print_server(server_profile(args.model, BROWSER_SENTENCES, args.rounds), computation)
    if not args.profile_only:
        long_input_python(args.model, args.repeats)
        page_chart_bytes(args.model)
    if not args.no_browser:
        browser_latency(args.model, args.rounds, computation)
    return 0
