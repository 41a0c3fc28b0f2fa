"""Where one click's time goes, beside the computation it asks for: part of ``app_latency``.

Server: the real page run by Streamlit's AppTest in this process, with the page's own functions timed where the page
calls them (each view's share, the cache look-ups, the chart specs, Streamlit's serialisation of the charts).
Browser: the websocket messages of each click (count, bytes, the largest) and Chromium's own CPU profile of it,
split by the script file the time was spent in: Vega's parse, compile and render (``embed.*.js``), Arrow decoding,
React, styles, Markdown, Streamlit's other scripts; the page's layout and style time beside them.
"""

from __future__ import annotations

import importlib
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any

# (module, attribute) → what it is: each timed where the page looks it up. Nested parts are indented.
SERVER_PARTS: tuple[tuple[str, str, str], ...] = (
    ("streamlit.runtime.caching.cache_utils", "CachedFunc.__call__", "cache look-ups (a miss's computation in)"),
    ("lab.attention.translate_with_maps", "translate_text", "  computation: translate"),
    ("lab.attention.translate_with_maps", "maps_of", "  computation: attention maps"),
    ("views.input_check", "show_input_check", "view: input check"),
    ("views.result", "show_output", "view: the translation"),
    ("views.guarded_result", "show_guard", "view: name guard"),
    ("views.result", "sentence_picker", "view: sentence and hypothesis pickers"),
    ("views.result", "hypothesis_picker", "view: sentence and hypothesis pickers"),
    ("views.maps", "show_maps", "view: the three maps"),
    ("views.maps", "map_chart", "  chart objects (frames, Altair)"),
    ("views.input_check", "show_example_hint", "view: the example's hint"),
    ("views.alignment_tab", "show_alignment", "view: the open tab (Alignment)"),
    ("streamlit.elements.vega_charts", "VegaChartsMixin._altair_chart", "st.altair_chart: serialisation"),
    ("streamlit.elements.vega_charts", "_convert_altair_to_vega_lite_spec", "  Altair to_dict + Arrow data"),
)
PAGE_RUN = "server: the page's script run"
# Chromium's profile: time spent in a script file, by the first frame with a URL up the stack (native calls such as
# canvas drawing count for the script that made them).
VEGA = "Vega parse + compile + render"
SCRIPT_KINDS = (
    ("embed.", VEGA),
    ("vega", VEGA),  # vega-interpreter: Vega's expressions, read without eval
    ("arrow", "Arrow decoding"),
    ("Quiver", "Arrow decoding"),
    ("recordbatch", "Arrow decoding"),
    ("react-dom", "React"),
    ("styled", "styles (emotion, styled-components)"),
    ("emotion", "styles (emotion, styled-components)"),
    ("SyntaxHighlighter", "st.code's highlighter"),
    ("Markdown", "Markdown"),
    ("rehype", "Markdown"),
    ("DataFrame", "dataframes"),
)
WS_HOOK = """() => {
    window.__messages = [];
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', e => window.__messages.push(
                [performance.now(), e.data.byteLength ?? e.data.size ?? e.data.length]));
        }
    };
}"""


class Spent:
    """Milliseconds per label, only the outermost call of a label counted (a cached function calling another)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        self.depth: dict[str, int] = defaultdict(int)

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.depth[label] += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth[label] -= 1
                if not self.depth[label]:
                    self.ms[label] += (time.perf_counter() - start) * 1000

        return timed

    def take(self) -> dict[str, float]:
        out, self.ms = dict(self.ms), defaultdict(float)
        return out


@contextmanager
def timing() -> Iterator[Spent]:
    """``SERVER_PARTS`` timed while inside; put back afterwards."""
    spent, undo = Spent(), []
    for module_name, attribute, label in SERVER_PARTS:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, spent.wrap(label, original))
        undo.append((owner, name, original))
    try:
        yield spent
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def median_parts(runs: list[dict[str, float]]) -> dict[str, float]:
    labels = dict.fromkeys(label for run in runs for label in run)
    return {label: statistics.median(run.get(label, 0.0) for run in runs) for label in labels}


def server_profile(model: Path, sentences: tuple[str, ...], rounds: int) -> dict[str, dict[str, float]]:
    """Median ms per part of the page's run, for: the first visit (the worked example), a new sentence, a cached
    one, and a layer change of the cross-attention map; each also with the chart bytes the run sent."""
    from streamlit.testing.v1 import AppTest

    os.environ["LAB_MODEL_DIR"] = str(model)
    runs: dict[str, list[dict[str, float]]] = defaultdict(list)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300)

    def run(case: str, act: Callable[[], object]) -> None:
        start = time.perf_counter()
        act()
        parts = spent.take()
        parts[PAGE_RUN] = (time.perf_counter() - start) * 1000
        parts["chart bytes sent (spec + Arrow)"] = sum(c.proto.ByteSize() for c in at.get("vega_lite_chart"))
        runs[case].append(parts)
        assert not at.exception, at.exception

    def click(text: str) -> None:
        at.text_area(key="source").set_value(text)
        at.button(key="translate").click().run()

    with timing() as spent:
        run("first visit", at.run)
        for text in sentences[1:]:
            run("new sentence", partial_click(click, text))
        for i in range(rounds):
            run("cached sentence", partial_click(click, sentences[i % len(sentences)]))
        layers = at.selectbox(key="cross_layer").options
        for i in range(rounds):
            run("layer change", lambda i=i: at.selectbox(key="cross_layer").select_index(i % len(layers)).run())
    return {case: median_parts(parts) for case, parts in runs.items()}


def partial_click(click: Callable[[str], None], text: str) -> Callable[[], None]:
    return lambda: click(text)


def print_server(profile: dict[str, dict[str, float]], computation_ms: float) -> None:
    """The parts side by side per case, each also as a multiple of the Python computation."""
    cases = list(profile)
    labels = list(dict.fromkeys([PAGE_RUN, *(label for _, _, label in SERVER_PARTS)]))
    print(f"profile server (AppTest, medians, ms; × = multiple of the computation, {computation_ms:.1f} ms)")
    print(f"profile   {'':42}" + "".join(f"{case:>22}" for case in cases))
    for label in labels:
        cells = [profile[case].get(label) for case in cases]
        if not any(cells):
            continue
        text = "".join(f"{'-':>22}" if not v else f"{v:9.1f} ms {v / computation_ms:6.2f}× " for v in cells)
        print(f"profile   {label:42}{text}")
    label = "chart bytes sent (spec + Arrow)"
    print(f"profile   {label:42}" + "".join(f"{profile[c].get(label, 0):>19,.0f} B " for c in cases))


@contextmanager
def browser_probe(page: Any) -> Iterator[Callable[[], dict[str, float]]]:
    """Chromium's CPU profiler and performance counters on ``page`` (before it loads: the websocket hook); yields
    ``measure(act, done)``: the parts of the time from ``act`` (a click) until ``done`` (a wait) returns."""
    page.add_init_script(script=f"({WS_HOOK})()")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})  # µs

    def measure(act: Callable[[], object], done: Callable[[], object]) -> dict[str, float]:
        before = metrics(cdp)
        cdp.send("Profiler.start")
        page.evaluate("() => { window.__messages = []; window.__click = performance.now(); }")
        act()
        done()
        # after a navigation (``act`` opened the page) the clock starts at the navigation: no __click
        drawn = page.evaluate("() => performance.now() - (window.__click ?? 0)")
        messages = page.evaluate("() => window.__messages.map(([t, n]) => [t - (window.__click ?? 0), n])")
        profile = cdp.send("Profiler.stop")["profile"]
        after = metrics(cdp)
        sizes = [n for t, n in messages if t <= drawn]
        times = [t for t, _ in messages if t <= drawn] or [0.0]
        parts = {
            "click → first message": times[0],
            "click → last message": times[-1],
            "last message → maps drawn": drawn - times[-1],
            "click → maps drawn": drawn,
            "messages": len(sizes),
            "bytes received": sum(sizes),
            "largest message (bytes)": max(sizes, default=0),
            "main thread: script (ms)": 1000 * (after["ScriptDuration"] - before["ScriptDuration"]),
            "main thread: layout + style (ms)": 1000
            * sum(after[k] - before[k] for k in ("LayoutDuration", "RecalcStyleDuration")),
        }
        return parts | script_time(profile)

    yield measure


def metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def script_time(profile: dict[str, Any]) -> dict[str, float]:
    """ms of the CPU profile per kind of script (``SCRIPT_KINDS``; the rest: Streamlit and React)."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent = {child: node["id"] for node in profile["nodes"] for child in node.get("children", ())}
    kind_of: dict[int, str] = {}

    def kind(node_id: int) -> str:
        if node_id not in kind_of:
            frame = nodes[node_id]["callFrame"]
            url = frame.get("url", "")
            if url:
                kind_of[node_id] = next((k for part, k in SCRIPT_KINDS if part in url), "Streamlit's other scripts")
            elif node_id in parent:
                kind_of[node_id] = kind(parent[node_id])
            else:
                kind_of[node_id] = frame.get("functionName", "")
        return kind_of[node_id]

    out: dict[str, float] = defaultdict(float)
    for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        name = kind(sample)
        if name in {k for _, k in SCRIPT_KINDS} | {"Streamlit's other scripts", "(garbage collector)"}:
            out[f"main thread: {name} (ms)"] += delta / 1000
    return dict(out)


def print_browser(profile: dict[str, dict[str, float]], computation_ms: float, charts: int = 3) -> None:
    cases = list(profile)
    print(f"profile browser (Chromium, medians; × = multiple of the computation, {computation_ms:.1f} ms)")
    print(f"profile   {'':42}" + "".join(f"{case:>22}" for case in cases))
    labels = list(dict.fromkeys(label for case in cases for label in profile[case]))
    for label in labels:
        cells = [profile[case].get(label, 0.0) for case in cases]
        if label.endswith("(bytes)") or label in ("messages", "bytes received"):
            text = "".join(f"{v:>20,.0f}  " for v in cells)
        else:
            text = "".join(f"{v:9.1f} ms {v / computation_ms:6.2f}× " for v in cells)
        print(f"profile   {label:42}{text}")
        if label.startswith("main thread: Vega"):
            print(
                f"profile   {'  per chart (/' + str(charts) + ')':42}"
                + "".join(f"{v / charts:9.1f} ms{'':11}" for v in cells)
            )
