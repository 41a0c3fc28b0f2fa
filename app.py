"""Translation lab: translate Spanish to English and look at the attention that produced the translation.

Run ``streamlit run app.py``. LAB_MODEL_DIR overrides the shipped model directory, LAB_RUNS_DIR the folder of
training runs, LAB_THREADS the torch threads (default 1). This file is the entry point and the Translate page;
the Train page is ``pages/1_Train.py`` and needs nothing from here.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import altair as alt
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import teach
from lab.alignment import READINGS, align
from lab.examples import EXAMPLES
from lab.explain import (
    EMPTY,
    Candidate,
    Explanation,
    Sentence,
    explain,
    maps_of,
    notices,
    positional_table,
    set_threads,
)
from lab.focus import Followed, focus
from lab.heads import CROSS_PATTERNS, PATTERNS, summarize
from lab.labels import captions, placeholder, short_axis_titles, source_label, title
from lab.languages import Languages, languages
from lab.maps import KIND_TITLES, KINDS, SentenceMaps, pick, problems, to_json
from lab.models import ModelChoice, default_index, find_models
from lab.request import Request, stale_note
from lab.views import grid_plan, map_view, too_big
from model.io import ModelLoadError
from model.run_dir import runs_folder
from model.translate import DEFAULT_MODEL, DecodeOptions, Translator
from viz.alignment import alignment_chart, alignment_frames
from viz.export import chart_html, chart_png, side_by_side
from viz.focus import CELL_SELECTION, PANEL_SELECTION, focus_frame
from viz.heads import HEAD_SELECTION, heads_chart, heads_frame
from viz.heatmap import attention_frame, heads_grid
from viz.positional import positional_chart, positional_frame

TABS = (
    "Alignment",
    "Step by step",
    "Arithmetic of a weight",
    "Head summary",
    "All heads",
    "Positional encoding",
    "Download",
)  # heavy: not first
SNIPPET = 70  # characters of a sentence in the sentence picker


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def load_translator(directory: str) -> Translator:
    """One shared, read-only model per directory and process."""
    return Translator.load(Path(directory))


@st.cache_data(show_spinner="Translating…", max_entries=64)
def translate(directory: str, text: str, beam_size: int, length_penalty: float, n_best: int) -> Explanation:
    """The translation of every piece of the text: one cached call per (model, text, decoding settings)."""
    options = DecodeOptions(beam_size=beam_size, length_penalty=length_penalty, n_best=n_best)
    return explain(load_translator(directory), text, options)


@st.cache_data(show_spinner=False, max_entries=64)
def attention(directory: str, src_ids: tuple[int, ...], tokens: tuple[int, ...]) -> SentenceMaps:
    """The maps of one hypothesis of one sentence, computed when it is looked at."""
    return maps_of(load_translator(directory), list(src_ids), list(tokens))


def model_picker() -> ModelChoice:
    """The shipped default (LAB_MODEL_DIR overrides it) and every finished run."""
    default = Path(os.environ.get("LAB_MODEL_DIR") or DEFAULT_MODEL)
    runs = runs_folder()  # LAB_RUNS_DIR, read as the Train page reads it
    choices = find_models(default, runs)
    choice = st.sidebar.selectbox(
        "Model", choices, index=default_index(choices), key="model", format_func=lambda c: c.label
    )
    if not choice.available:
        st.warning(
            f"The model `{choice.path}` is not trained yet. Pick a finished run in the sidebar when there is one, or "
            "train one: `python -m training.train --config configs/tiny.toml --corpus FILE --out runs/NAME`."
        )
    return choice


def decoding_settings() -> tuple[int, float, int]:
    """(beam size, length penalty, n-best) from the sidebar; beam size 1 means greedy."""
    st.sidebar.header("Decoding")
    if st.sidebar.radio("Search", ["greedy", "beam search"], key="search", horizontal=True) == "greedy":
        return 1, 1.0, 1
    beam = st.sidebar.slider("Beam size", 2, 8, 4, key="beam_size")
    penalty = st.sidebar.slider(
        "Length penalty",
        0.0,
        2.0,
        1.0,
        0.1,
        key="length_penalty",
        help="Scores are log-probability / length^penalty; higher favours longer outputs.",
    )
    n_best = st.sidebar.slider("Hypotheses to show (n-best)", 1, beam, min(3, beam), key="n_best")
    return beam, penalty, n_best


def page_request(choice: ModelChoice, settings: tuple[int, float, int]) -> Request:
    """What the page asks for right now: the picked model, the text in the box, the decoding settings."""
    model = str(choice.path) if choice.available else ""
    return Request(model, choice.label, st.session_state.get("source", ""), *settings)


def submit(choice: ModelChoice, settings: tuple[int, float, int]) -> None:
    """Translate button: remember this session's request (text and settings at the moment of the click)."""
    st.session_state["request"] = page_request(choice, settings)


def use_example() -> None:
    if st.session_state.get("example"):
        st.session_state["source"] = st.session_state["example"]


def source_input(choice: ModelChoice, settings: tuple[int, float, int], langs: Languages) -> None:
    st.selectbox(
        "Pick a guided example",
        [e.source for e in EXAMPLES],
        index=None,
        placeholder="Examples the model translates correctly, each with something to look for…",
        key="example",
        on_change=use_example,
    )
    st.text_area(source_label(langs), key="source", height=80, max_chars=5000, placeholder=placeholder(langs))
    st.button(
        "Translate",
        key="translate",
        type="primary",
        disabled=not choice.available,
        on_click=submit,
        args=(choice, settings),
    )


def show_output(result: Explanation, request: Request, now: Request, langs: Languages) -> None:
    """The whole translation, what was cut, and what it was computed from (marked when the page has changed since)."""
    note = stale_note(request, now)
    if note:
        with st.container(key="stale"):
            st.warning(note)
    st.subheader(langs.tgt)
    with st.container(key="translation"):
        st.code(result.text or EMPTY, language=None, wrap_lines=True)  # plain text: never rendered as HTML/markdown
    for notice in notices(result):
        st.warning(notice)
    with st.container(key="provenance"):
        st.text(f"Model: {request.model_label}  ·  decoding: {request.settings}")  # plain text, never markdown
        with st.expander(f"{langs.src} source of this result", expanded=len(request.text) <= 400):
            st.code(request.text, language=None, wrap_lines=True)


def sentence_picker(result: Explanation, langs: Languages) -> Sentence:
    """The sentence whose n-best list and maps are shown (no picker for a one-piece input)."""
    sentences = result.sentences
    if len(sentences) == 1:
        return sentences[0]
    st.info(
        f"This text was translated in {len(sentences)} pieces, sentence by sentence (a long sentence at its commas "
        f"or between words): the model reads at most {result.max_src_len} subwords and learned from single "
        "sentences. The maps below are those of one piece at a time: choose it here."
    )
    with st.container(key="sentences"):
        st.dataframe(
            [
                {"#": i + 1, langs.src: s.source, langs.tgt: s.best.shown, "cut": s.best.truncated or s.cut}
                for i, s in enumerate(sentences)
            ],
            hide_index=True,
            height=min(400, 36 + 35 * len(sentences)),
        )

    def snippet(i: int) -> str:
        text = sentences[i].source
        return f"{i + 1}. {text if len(text) <= SNIPPET else text[: SNIPPET - 1] + '…'}"

    index = st.selectbox("Show the attention of sentence", range(len(sentences)), key="sentence", format_func=snippet)
    return sentences[index if index is not None and index < len(sentences) else 0]


def hypothesis_picker(sentence: Sentence) -> Candidate:
    """The n-best list of the shown sentence and the hypothesis whose attention is shown."""
    if len(sentence.candidates) == 1:
        return sentence.candidates[0]
    with st.container(key="nbest"):
        st.dataframe(
            [
                {
                    "rank": i + 1,
                    "translation": c.shown,
                    "score": c.score,
                    "log-probability": c.log_prob,
                    "cut at the length limit": c.truncated,
                }
                for i, c in enumerate(sentence.candidates)
            ],
            hide_index=True,
        )
    index = st.selectbox(
        "Show the attention of hypothesis",
        range(len(sentence.candidates)),
        key="hypothesis",
        format_func=lambda i: f"#{i + 1}  (score {sentence.candidates[i].score:.3f})",
    )
    return sentence.candidates[index if index is not None and index < len(sentence.candidates) else 0]


def layer_select(column: DeltaGenerator, label: str, n_layers: int, key: str) -> int | None:
    """A layer chooser (1-based labels), starting at the last layer."""
    return column.selectbox(label, range(n_layers), index=n_layers - 1, format_func=lambda i: f"layer {i + 1}", key=key)


def display_controls(maps: SentenceMaps, langs: Languages) -> tuple[int, int, int | None, bool]:
    """(encoder layer, decoder layer, head or None for the mean, word level) — never a hard-coded layer."""
    a, b, c, d, e = st.columns(5)
    enc = layer_select(a, "Encoder layer", maps.n_layers("encoder"), "enc_layer")
    dec = layer_select(b, "Decoder layer", maps.n_layers("cross"), "dec_layer")
    head = c.selectbox(
        "Head", range(-1, maps.n_heads), key="head", format_func=lambda h: "mean of heads" if h < 0 else f"head {h + 1}"
    )
    words = d.toggle(
        "Whole words",
        key="words",
        help=f"Sum over the subwords of a {langs.src} word (columns), average over "
        f"the subwords of a {langs.tgt} word (rows): rows still sum to 1.",
    )
    e.toggle(
        "Same 0–1 colour scale",
        key="shared_scale",
        help="Off: each map spreads its colours over its own weights. On: one colour is one weight in every view.",
    )
    return enc or 0, dec or 0, None if head is None or head < 0 else head, words


def shared_scale() -> bool:
    return bool(st.session_state.get("shared_scale"))


def show_views(
    maps: SentenceMaps, enc: int, dec: int, head: int | None, words: bool, langs: Languages, followed: Followed | None
) -> list[alt.Chart]:
    """The three kinds of attention side by side; returns the charts drawn (for download)."""
    charts = []
    which = "mean of heads" if head is None else f"head {head + 1}"
    with st.container(key="views"):
        for column, kind in zip(st.columns(3), KINDS, strict=True):
            with column:
                st.caption(captions(langs)[kind])
                view = map_view(maps, kind, words)
                if too_big(view):
                    st.info(too_big(view))
                    continue
                layer = enc if kind == "encoder" else dec
                lit = focus(maps, kind, followed, words)
                weights, subtitle = pick(view.weights, layer, head), f"layer {layer + 1}, {which}"
                charts.append(teach.heatmap(view, weights, KIND_TITLES[kind], subtitle, langs, lit, shared_scale()))
                st.altair_chart(
                    teach.clickable_cells(charts[-1]),
                    key=f"map_{kind}",
                    width="stretch",
                    on_select=partial(teach.cell_clicked, maps, kind, words),
                    selection_mode=CELL_SELECTION,
                )
    st.caption(
        "Attention shows where the model looked — one window into it, not an explanation of why it chose a word."
    )
    return charts


def show_all_heads(
    maps: SentenceMaps, enc: int, dec: int, words: bool, langs: Languages, followed: Followed | None
) -> None:
    kind = st.radio("Kind", KINDS, format_func=KIND_TITLES.get, horizontal=True, key="grid_kind")
    st.caption(
        "Every layer (rows of panels) and head (columns of panels) at once: heads of one layer often "
        "specialise in different patterns. Click a panel to show that layer and head above."
    )
    view = map_view(maps, kind, words)
    plan = grid_plan(view, enc if kind == "encoder" else dec)
    if plan.note:
        st.info(plan.note)
    if not plan.layers:
        return
    frame = attention_frame(
        view.weights[plan.layers], view.rows, view.cols, view.future, view.inputs, first_layer=plan.layers[0] + 1
    )
    lit = focus(maps, kind, followed, words)
    if lit.rows or lit.cols:
        frame = focus_frame(frame, lit.rows, lit.cols)
    grid = heads_grid(frame, f"{KIND_TITLES[kind]}: all heads", *short_axis_titles(kind, langs))
    st.altair_chart(
        teach.grid_aids(grid, shared_scale()),
        key="grid",
        width="content",
        on_select=partial(teach.panel_clicked, kind),
        selection_mode=PANEL_SELECTION,
    )


def show_alignment(maps: SentenceMaps, dec: int, head: int | None, words: bool, langs: Languages) -> None:
    st.caption(
        f"Each {langs.tgt} unit linked to the {langs.src} unit it attends to most, in the cross-attention of the "
        "decoder layer and head chosen above."
    )
    st.info(
        "Attention is not explanation: an alignment read from attention is a window into the model, not proof "
        "of why it chose a word."
    )
    reading = st.radio("Reading", list(READINGS), format_func=READINGS.get, key="reading")
    result = align(maps, dec, head, reading, words)
    st.caption(
        f"Left out before the argmax: source {', '.join(result.excluded) or 'nothing'} (end-of-sentence and "
        f"padding soak up attention). The final </s> row has no {langs.tgt} word. The maps above are unchanged."
    )
    links = [(link.target, link.source, link.weight) for link in result.links]
    tokens, link_frame = alignment_frames(result.source, result.target, links)
    st.altair_chart(alignment_chart(tokens, link_frame, "Alignment"), key="alignment", width="stretch")
    st.dataframe(
        link_frame[["target", "source", "weight"]].rename(columns={"target": langs.tgt, "source": langs.src}),
        hide_index=True,
    )


def head_clicked() -> None:
    """A click on the head summary chart chooses that head in the "Show head" box (1-based in the chart)."""
    picked = st.session_state["summary_chart"].selection.get(HEAD_SELECTION) or []
    if picked and {"layer", "head"} <= set(picked[0]):
        st.session_state["summary_head"] = (int(picked[0]["layer"]) - 1, int(picked[0]["head"]) - 1)


def show_head_summary(maps: SentenceMaps, words: bool, langs: Languages) -> None:
    kind = st.radio("Kind", KINDS, format_func=KIND_TITLES.get, horizontal=True, key="summary_kind")
    patterns = ", ".join(CROSS_PATTERNS if kind == "cross" else PATTERNS)  # cross-attention keys are Spanish tokens
    st.caption(
        "Entropy (bits, mean over rows): low = the head looks at one token, high = it spreads out. The label names "
        f"the position most rows look at most ({patterns}), else 'content' (sharp but word-dependent) or 'broad'. "
        "Click a cell to show that head."
    )
    view = map_view(maps, kind, words)
    summaries = summarize(view.weights, view.future, cross=kind == "cross")
    frame = heads_frame([(h.layer, h.head, h.entropy, h.label, h.share) for h in summaries])
    st.altair_chart(
        heads_chart(frame, f"{KIND_TITLES[kind]}: what each head does"),
        key="summary_chart",
        on_select=head_clicked,
        selection_mode=HEAD_SELECTION,
        width="stretch",
    )
    pairs = [(h.layer, h.head) for h in summaries]
    chosen = st.selectbox(
        "Show head", pairs, key="summary_head", format_func=lambda p: f"layer {p[0] + 1}, head {p[1] + 1}"
    )
    layer, head = chosen or pairs[0]
    if too_big(view):
        st.info(too_big(view))
        return
    subtitle = f"layer {layer + 1}, head {head + 1}"
    chart = teach.heatmap(view, view.weights[layer, head], KIND_TITLES[kind], subtitle, langs, None, shared_scale())
    st.altair_chart(chart, key="summary_map", width="stretch")


def show_positional(directory: str, maps: SentenceMaps) -> None:
    st.caption(
        "The position signal added to each token's embedding before the first layer, one row per position of "
        "this sentence: slow and fast waves let the model tell positions apart and compare distances."
    )
    table = positional_table(load_translator(directory), len(maps.src))
    st.altair_chart(positional_chart(positional_frame(table), "Positional encoding"), key="positional", width="stretch")
    teach.show_positional_curves(table)


def show_downloads(sentence: Sentence, candidate: Candidate, maps: SentenceMaps, charts: list[alt.Chart]) -> None:
    st.caption("The maps of the shown hypothesis (every layer and head, with token labels) and the charts above.")
    st.download_button(
        "Attention maps (JSON)",
        lambda: to_json(maps, sentence.source, candidate.text),
        file_name="attention_maps.json",
        mime="application/json",
        key="download_json",
        on_click="ignore",
    )
    if not charts:
        return
    combined = side_by_side(*charts)
    st.download_button(
        "Charts (HTML)",
        lambda: chart_html(combined),
        file_name="attention.html",
        mime="text/html",
        key="download_html",
        on_click="ignore",
    )
    st.download_button(
        "Charts (PNG)",
        lambda: chart_png(combined),
        file_name="attention.png",
        mime="image/png",
        key="download_png",
        on_click="ignore",
    )


def translate_page() -> None:
    set_threads(os.environ.get("LAB_THREADS"))
    st.set_page_config(page_title="Translate · Translation lab", layout="wide")
    choice = model_picker()
    langs = languages(choice.path)
    st.title(title(langs))
    settings = decoding_settings()
    source_input(choice, settings, langs)
    request = st.session_state.get("request")
    if not isinstance(request, Request):
        st.info(f"Type a {langs.src} sentence (or pick an example) and press Translate.")
        return
    if not request.text.strip():
        st.info(f"Nothing to translate yet: type a {langs.src} sentence first.")
        return
    langs = languages(Path(request.model))  # the result's model, which may no longer be the one picked
    try:
        result = translate(request.model, request.text, request.beam_size, request.length_penalty, request.n_best)
    except ModelLoadError as err:
        st.error(f"This model cannot be loaded: {err}")
        return
    translator = load_translator(request.model)
    teach.show_input_check(result, translator, langs)
    show_output(result, request, page_request(choice, settings), langs)
    teach.show_example_hint(request.text)
    sentence = sentence_picker(result, langs)
    candidate = hypothesis_picker(sentence)
    maps = attention(request.model, tuple(sentence.src_ids), tuple(candidate.tokens))
    for problem in problems(maps):
        st.error(f"Broken attention invariant: {problem}")
    enc, dec, head, words = display_controls(maps, langs)
    followed = teach.follow_picker(maps, langs)
    teach.show_legend()
    charts = show_views(maps, enc, dec, head, words, langs, followed)
    tabs = st.tabs(TABS, key="view", on_change="rerun")
    sections = (
        lambda: show_alignment(maps, dec, head, words, langs),
        lambda: teach.show_steps(
            translator,
            request.model,
            sentence.src_ids,
            candidate.tokens,
            maps,
            teach.beam_settings(request.beam_size, request.length_penalty),
            dec,
            head,
            langs,
        ),
        lambda: teach.show_arithmetic(translator, maps, enc, dec, head, langs),
        lambda: show_head_summary(maps, words, langs),
        lambda: show_all_heads(maps, enc, dec, words, langs, followed),
        lambda: show_positional(request.model, maps),
        lambda: show_downloads(sentence, candidate, maps, charts),
    )
    for tab, section in zip(tabs, sections, strict=True):
        if tab.open:  # only the open tab runs: the all-heads grid is computed only when asked for
            with tab:
                section()


def main() -> None:
    """Two pages, named in the sidebar: Translate (this file, the default) and Train."""
    pages = [
        st.Page(translate_page, title="Translate", default=True),  # no icons: they are fetched from the internet
        st.Page("pages/1_Train.py", title="Train"),
    ]
    st.navigation(pages).run()


main()
