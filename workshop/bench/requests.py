"""Every request the Translate page can make, at its worst allowed input: seconds each, and the limit that bounds it.

1. Python, on the shipped model with ``--threads`` torch threads: the lab's own functions that a tab calls on one
   rerun (the page caches each result; a first request pays all of it), each at the worst input the page lets
   through: 5,000 characters without punctuation, beam 8 and n-best 8; the what-if tools on the 40-subword piece
   (``data.sentences.MAX_PIECE``) of that text with the longest output; every head off; integrated gradients at the
   most points. Wall and CPU seconds (all threads): the machine is shared, and on 2 idle
   cores a request takes at most its CPU time. Target: CPU ≤ 10 s, or refused before it starts.
2. ``--sessions N``: ``streamlit run app.py`` and N browser sessions (Playwright, Debian's Chromium), each
   translating a new long sentence with a What-if tool open in a loop for ``--seconds``: ``--tool heads`` (a
   re-decode and the one-pass-per-head scan) or ``--tool attribution`` (integrated gradients, the heaviest); median
   and worst latency from the Translate click to the tool's chart drawn, and the server's RSS before and after.

    python -m workshop bench requests                       # the table, 2 threads
    python -m workshop bench requests --sessions 5 --seconds 60
    python -m workshop bench requests --sessions 5 --tool attribution
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from data.sentences import MAX_PIECE
from data.tokenizer import Tokenizer
from lab.alignment.links import align
from lab.attention.step_choices import beam_trace, choices, next_token_log_probs, prefix_with
from lab.attention.translate_with_maps import maps_of, translate_text
from lab.neighbours.lookup import candidates, query_states
from lab.neighbours.sentence_index import load
from lab.ranking import MAX_BYTES, MAX_LINES, MAX_WORK, Line, rank
from lab.teaching.outcome import MAX_SECONDS, MAX_STEPS
from lab.whatif.attribution import MAX_IG_STEPS, MAX_IG_WORK, attribute
from lab.whatif.forced_prefix import force
from lab.whatif.head_ablation import MAX_SCANNED, ablate, all_heads, head_effects
from lab.whatif.source_edits import edit_and_compare, edited_ids, source_words
from lab.whatif.steering import MAX_SOURCE, output_limit
from model.run_dir import NEIGHBOURS_INDEX_FILE
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translation, Translator
from workshop.bench.app_latency import PARAGRAPH, long_input
from workshop.bench.app_server import view_pill
from workshop.bounds import MAX_BENCH_SECONDS, MAX_REPEATS, MAX_SESSIONS, use_threads, within

TEXT_BOX = 5000  # the text box's max_chars (app.py)
BEAM = DecodeOptions(beam_size=8, length_penalty=2.0, n_best=8)  # the sidebar's largest beam and n-best
TARGET_S = 10.0
Timing = tuple[float, float]  # wall-clock seconds, CPU seconds (every thread): on 2 idle cores, wall ≤ CPU
Row = tuple[str, str, Timing, str]  # tool, worst input, timing, limit
NOT_TIMED = (float("nan"), float("nan"))


def worst_piece(translator: Translator, text: str) -> Translation:
    """The piece of ``text`` with the most source subwords and, among those, the longest beam-8 output."""
    result = translate_text(translator, text, BEAM)
    return max(result.sentences, key=lambda s: (len(s.src_ids), len(s.best.tokens)))


def seconds(fn: Callable[[], object], repeats: int) -> Timing:
    """The slowest of ``repeats`` calls (each a first request: nothing is cached inside the lab)."""
    out = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - start, time.process_time() - cpu))
    return max(w for w, _ in out), max(c for _, c in out)


def translate_rows(translator: Translator, repeats: int) -> list[Row]:
    text = long_input(TEXT_BOX, punctuation=False)
    piece = worst_piece(translator, text)
    shown = (piece.src_ids, piece.best.tokens)
    return [
        (
            "Translate",
            f"{TEXT_BOX:,} characters, no punctuation, beam 8, n-best 8",
            seconds(lambda: translate_text(translator, text, BEAM), repeats),
            f"text box {TEXT_BOX:,} chars; pieces of {MAX_PIECE} subwords; beam ≤ 8",
        ),
        (
            "Maps of a piece",
            f"{len(shown[0])} → {len(shown[1])} subwords",
            seconds(lambda: maps_of(translator, *shown), repeats),
            "one forced pass",
        ),
    ]


def whatif_rows(translator: Translator, piece: Translation, repeats: int) -> list[Row]:
    """Each what-if tool without a limit of its own, as its view computes it on one rerun, at its worst settings."""
    model, tok = translator.model, translator.tokenizer
    src, out = piece.src_ids, piece.best.tokens
    size = f"{len(src)} subwords → {len(out)}, beam 8"
    long_prefix = " ".join(PARAGRAPH) * 40  # far longer than any output: cut to the output limit
    heads = all_heads(model)

    def forced() -> None:  # a word's alternative at the last position: the longest prefix kept (cut to the limit)
        choices(model, tok, src, out)
        result = force(model, src, tok.encode_tgt(long_prefix)[:-1], out, BEAM)
        maps_of(translator, src, result.tokens)

    def heads_off() -> None:
        ablate(model, src, out, heads, BEAM)
        head_effects(model, src, out)

    limit = f"output ≤ {output_limit(model, src, BEAM)} tokens"
    return [
        (
            "A word's alternatives, the rest re-decoded",
            f"{size}, a {len(long_prefix):,}-char prefix",
            seconds(forced, repeats),
            limit,
        ),
        (
            "What if: switch heads off",
            f"{size}, all {len(heads)} heads off + scan",
            seconds(heads_off, repeats),
            f"scan ≤ {MAX_SCANNED} heads",
        ),
    ]


def refused(fn: Callable[[], object]) -> Timing:
    """The time until ``fn`` refuses (ValueError); an error if it does not."""
    start, cpu = time.perf_counter(), time.process_time()
    try:
        fn()
    except ValueError:
        return time.perf_counter() - start, time.process_time() - cpu
    raise AssertionError("expected a refusal")


def longest_replacement(tok: Tokenizer, src: list[int], word: int) -> str:
    """The most words "gato …" that replace ``word`` and keep the edited source within MAX_SOURCE subwords."""
    words = source_words(tok, src)
    n = 1
    while len(edited_ids(tok, src, words, word, "replace", "gato " * (n + 1))[0]) <= MAX_SOURCE:
        n += 1
    return ("gato " * n).strip()


def limited_whatif_rows(translator: Translator, piece: Translation, repeats: int) -> list[Row]:
    """Change the Spanish and Attribution: the worst input each limit lets through, and the first it refuses."""
    model, tok = translator.model, translator.tokenizer
    src, out = piece.src_ids, piece.best.tokens
    word, last = source_words(tok, src).editable[0], len(out) - 1
    longest = longest_replacement(tok, src, word)
    points = min(MAX_IG_STEPS, MAX_IG_WORK // (len(src) + last + 1))

    def edit(new: str) -> Callable[[], object]:
        return lambda: edit_and_compare(model, tok, src, out, (word, "replace", new), BEAM, 2)

    def attribution(steps: int) -> Callable[[], None]:
        def run() -> None:
            next_token_log_probs(model, src, [model.config.bos_id, *out[:last]])  # the contrast's choices
            attribute(model, src, out, last, contrast=5, steps=steps)

        return run

    edited = len(edited_ids(tok, src, source_words(tok, src), word, "replace", longest)[0])
    size = f"{len(src)} subwords → {len(out)}, beam 8"
    return [
        (
            "What if: change the Spanish",
            f"{size}, word 1 → {len(longest.split())} words ({edited} subwords)",
            seconds(edit(longest), repeats),
            f"edited source ≤ {MAX_SOURCE} subwords",
        ),
        ("What if: change the Spanish", "one subword more", refused(edit(longest + " gato")), "refused"),
        (
            "What if: attribution",
            f"{size}, last token, contrastive, {points} points",
            seconds(attribution(points), repeats),
            f"points × subwords ≤ {MAX_IG_WORK:,}",
        ),
        ("What if: attribution", f"the same at {MAX_IG_STEPS} points", refused(attribution(MAX_IG_STEPS)), "refused"),
    ]


def step_rows(translator: Translator, piece: Translation, repeats: int) -> list[Row]:
    """The Step tab: every step's choices, the beam replay, and a candidate taken at the first step."""
    model, tok = translator.model, translator.tokenizer
    src, out = piece.src_ids, piece.best.tokens

    def step_tab() -> None:
        steps = choices(model, tok, src, out)
        beam_trace(model, tok, src, BEAM.beam_size, BEAM.length_penalty)
        force(model, src, prefix_with(out, 0, steps[0].top_ids[-1]), out, BEAM)

    return [
        (
            "Step by step",
            f"{len(src)} subwords → {len(out)}, beam 8, a candidate taken at step 1",
            seconds(step_tab, repeats),
            "beam ≤ 8; output limit",
        )
    ]


def alignment_rows(translator: Translator, piece: Translation, repeats: int) -> list[Row]:
    """The Alignment tab: attention links."""
    src = piece.src_ids
    maps = maps_of(translator, src, piece.best.tokens)
    return [
        (
            "Alignment: attention",
            f"{len(src)} → {len(piece.best.tokens)} subwords",
            seconds(lambda: align(maps, 2, None, "predicts", True), repeats),
            "none needed",
        ),
    ]


def other_tab_rows(translator: Translator, piece: Translation, repeats: int, ranking: bool) -> list[Row]:
    """The newer tabs: a neighbour lookup on the shipped model's sentence index (the 128 nearest pairs encoded and
    teacher-forced again), a ranked text; Teach and the toy are bounded by time by design (their own locks, one run
    per server)."""
    model, src, out = translator.model, piece.src_ids, piece.best.tokens
    index = load(DEFAULT_MODEL / NEIGHBOURS_INDEX_FILE)

    def lookup() -> None:
        candidates(index, translator, query_states(model, src, out)[0])

    rows: list[Row] = [
        ("Where did it learn this?", "the shipped index's candidates", seconds(lookup, repeats), "128 candidates")
    ]
    if ranking:  # the most the tab ranks at once: MAX_WORK source subwords × beam size, greedy and at beam 8
        line = long_input(MAX_BYTES // MAX_LINES, punctuation=False)
        per_line = len(translator.tokenizer.encode_src(f"0 {line}"))
        for beam in (DecodeOptions(), BEAM):
            n = min(MAX_LINES, MAX_WORK // (per_line * beam.beam_size))
            lines = [Line(i + 1, f"{i % 10} {line}", None) for i in range(n)]
            rows.append(
                (
                    "Find the bad translations",
                    f"{n} lines of {per_line} subwords, beam {beam.beam_size}",
                    seconds(lambda lines=lines, beam=beam: rank(translator, lines, beam), 1),
                    f"≤ {MAX_WORK:,} subwords × beam, {MAX_LINES} lines, {MAX_BYTES:,} bytes",
                )
            )
    rows.append(
        (
            "Teach a correction",
            "(by design)",
            NOT_TIMED,
            f"≤ {MAX_STEPS} steps or {MAX_SECONDS:g} s + checks; one per server",
        )
    )
    rows.append(("Watch it learn", "(by design)", NOT_TIMED, "≤ 45 s; one per server"))
    return rows


WIDTHS = (28, 66)


def print_rows(rows: list[Row]) -> None:
    """Rows as they are measured (a long run shows what it has)."""
    for tool, worst, (wall, cpu), limit in rows:
        flag = "  OVER 10 s" if cpu > TARGET_S else ""  # CPU: what 2 idle cores would take at most
        print(f"{tool:<{WIDTHS[0]}}  {worst:<{WIDTHS[1]}}  {wall:6.2f}  {cpu:6.2f}  {limit}{flag}", flush=True)


def python_table(model: Path, repeats: int, ranking: bool) -> None:
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    translator = Translator.load(model)
    translator.translate("Hola.")  # first call: lazy initialisation, not a request's cost
    print(f"model {model}, {torch.get_num_threads()} torch threads, the slowest of {repeats} runs")
    print(f"{'tool':<{WIDTHS[0]}}  {'worst input':<{WIDTHS[1]}}  {'wall s':>6}  {'CPU s':>6}  limit")
    print_rows(translate_rows(translator, repeats))
    piece = worst_piece(translator, long_input(TEXT_BOX, punctuation=False))
    for rows in (whatif_rows, limited_whatif_rows, step_rows, alignment_rows):
        print_rows(rows(translator, piece, repeats))
    print_rows(other_tab_rows(translator, piece, repeats, ranking))
    print(f"load average now {os.getloadavg()[0]:.2f} (the machine is shared: figures vary with its load)")


# --- N browser sessions at once ---

TOOLS = {  # --tool: the What-if tool each session opens, and a text its panel shows once it has computed
    "heads": ("Switch heads off", "One teacher-forced pass"),
    "attribution": ("Attribution", "share of |attribution|"),  # integrated gradients, 64 points: the heaviest
}
TOOL_DRAWN = """([expected, marker]) => {
    const output = document.querySelector('.st-key-translation [data-testid="stText"]');
    const panel = Array.from(document.querySelectorAll('[role="tabpanel"]')).find(p => !p.hidden && p.offsetParent);
    return output && output.innerText.trim() === expected && panel && panel.innerText.includes(marker)
        && panel.querySelector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg') !== null
        && document.querySelectorAll('[data-stale="true"]').length === 0
        && document.querySelector('[data-testid="stStatusWidget"] button') === null;
}"""  # the status widget holds a Stop button while the script runs


def session_sentences(translator: Translator, session: int, n: int) -> list[tuple[str, str]]:
    """``n`` long sentences for one session, each new to the server (its caches), with the English the page shows."""
    out = []
    for i in range(n):
        base = PARAGRAPH[(session + i) % len(PARAGRAPH)].rstrip(".!?")
        text = (
            f"{base}, y {PARAGRAPH[(session + 3 * i + 1) % len(PARAGRAPH)].lower().rstrip('.!?')} {session * 1000 + i}."
        )
        out.append((text, translate_text(translator, text).text))
    return out


async def one_session(browser, url: str, sentences: list[tuple[str, str]], deadline: float, tool: str) -> list[float]:
    """Translate each sentence in turn with the What if tab on ``tool`` (a key of TOOLS), until ``deadline``:
    seconds from each Translate click to the tool's chart drawn (the first, which opens the tab, left out)."""
    label, marker = TOOLS[tool]
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    page = await (await browser.new_context(viewport={"width": 1600, "height": 1000})).new_page()
    await page.goto(url)
    box = page.get_by_role("textbox", name="Spanish sentence")
    await box.wait_for(timeout=120_000)
    latencies: list[float] = []
    for i, (text, expected) in enumerate(sentences):
        if i > 1 and time.monotonic() > deadline:  # at least the tab opened and one timed translation
            break
        await box.fill(text)
        start = time.perf_counter()
        await page.get_by_role("button", name="Translate").click()
        if i == 0:  # open the tab and the tool once: they stay open for the session's later translations
            await page.locator('.st-key-translation [data-testid="stText"]').first.wait_for(timeout=120_000)
            await view_pill(page, "What if").click()
            await page.get_by_text(label, exact=True).click()
        try:
            await page.wait_for_function(TOOL_DRAWN, arg=[expected, marker], timeout=120_000)
        except PlaywrightTimeout:
            latencies.append(float("inf"))
            continue
        if i > 0:
            latencies.append(time.perf_counter() - start)
    await page.context.close()
    return latencies


def server_rss_mb() -> tuple[float, float]:
    """(RSS, peak RSS) in MB of this process's ``streamlit run`` child, read from /proc."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields["PPid"]) == os.getpid() and b"streamlit" in cmdline:
            return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    raise RuntimeError("the streamlit server is not running")


def concurrent_sessions(model: Path, sessions: int, duration: float, threads: int, tool: str) -> None:
    import asyncio

    from playwright.async_api import async_playwright

    from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, running_app

    translator = Translator.load(model)
    plans = [session_sentences(translator, s, 40) for s in range(sessions + 1)]  # the last: the warm-up's
    env = dict(os.environ, LAB_MODEL_DIR=str(model), LAB_THREADS=str(threads), OMP_NUM_THREADS=str(threads))

    async def drive(url: str, plans: list[list[tuple[str, str]]], duration: float) -> list[list[float]]:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            deadline = time.monotonic() + duration
            found = await asyncio.gather(*(one_session(browser, url, plan, deadline, tool) for plan in plans))
            await browser.close()
            return found

    with running_app(env) as url:
        fresh = server_rss_mb()
        asyncio.run(drive(url, [plans[-1][:2]], 0))  # one session, two sentences: the model loaded, pages warm
        before = server_rss_mb()
        start = time.perf_counter()
        found = asyncio.run(drive(url, plans[:-1], duration))
        took, after = time.perf_counter() - start, server_rss_mb()
    times = sorted(t for session in found for t in session)
    kept = [t for t in times if t != float("inf")] or [float("nan")]
    print(
        f"{sessions} sessions for {took:.0f} s (load average {os.getloadavg()[0]:.2f}), server {threads} threads: "
        f"{len(kept)} translations + {TOOLS[tool][0].lower()}, Translate click -> its chart drawn: median "
        f"{statistics.median(kept):.1f} s, worst {max(kept):.1f} s; {len(times) - len(kept)} not drawn within 120 s"
    )
    print(
        f"server RSS {fresh[0]:.0f} MB fresh, {before[0]:.0f} MB after one warm-up session, {after[0]:.0f} MB after "
        f"the {sessions} sessions (peak {after[1]:.0f} MB)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop bench requests", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL))
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the app's LAB_THREADS)")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls per request; the slowest is shown")
    parser.add_argument("--no-ranking", action="store_true", help="skip ranking 500 lines (the slowest row)")
    parser.add_argument("--sessions", type=int, default=0, help="browser sessions at once (0: the table only)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the sessions run")
    parser.add_argument("--tool", choices=list(TOOLS), default="heads", help="the What-if tool the sessions open")
    args = parser.parse_args(argv)
    use_threads(args.threads, default=False)
    within("--repeats", args.repeats, 1, MAX_REPEATS, "timed calls")
    within("--sessions", args.sessions, 0, MAX_SESSIONS, "browser sessions")
    within("--seconds", args.seconds, 1, MAX_BENCH_SECONDS, "seconds")
    if args.sessions:
        concurrent_sessions(args.model, args.sessions, args.seconds, args.threads, args.tool)
        return 0
    python_table(args.model, args.repeats, not args.no_ranking)
    return 0
