"""Translation lab: translate Spanish to English and look at the attention that produced the translation.

Run ``streamlit run app.py``. LAB_MODEL_DIR overrides the shipped model directory, LAB_RUNS_DIR the folder of
training runs, LAB_THREADS the torch threads (default 1), LAB_GOLD_ALIGNMENTS the file of gold-aligned sentences
offered (``lab.alignment.gold``). This file is the entry point and the Translate page's wiring: the cached model,
the sidebar, the input and the views under the maps (``VIEWS``: each, one per file in ``views/``, takes one
``TabContext``).
The Train page is ``pages/1_Train.py`` and needs nothing from here.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import replace
from functools import partial
from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from data.languages import with_article
from jobs.launch import live_runs
from lab.attention.sentence_maps import SentenceMaps, problems
from lab.attention.translate_with_maps import TextTranslation, maps_of, set_threads, translate_text
from lab.page.direction import Languages, languages
from lab.page.examples import by_source, examples_for, no_examples_note
from lab.page.labels import placeholder, source_label, title
from lab.page.model_choices import KEPT_MODEL, ModelChoice, default_index, find_models, other_shipped, shipped_model
from lab.page.request import Request
from model.run_dir import WEIGHTS_FILE
from model.weights import ModelLoadError
from translate.model_dir import weights_dir
from translate.name_guard import MarkError
from translate.settings import repo_relative, runs_folder
from translate.translator import KEEP_HELP, Candidate, DecodeOptions, Translation, Translator
from views.alignment_tab import gold_picker
from views.compare_tab import ASKED, COMPARE_VIEW, TRANSLATE_PAGE
from views.guarded_result import GUARD_KEY, guard_switch, show_guard
from views.input_check import show_example_hint, show_input_check, show_view
from views.maps import ROOM_FOR_MAPS, show_maps
from views.result import hypothesis_picker, sentence_picker, show_output
from views.source_line import show_source_words
from views.tab_context import TabContext
from views.word_alternatives import show_word_alternatives


def weights_version(directory: str) -> int:
    """When the weights of ``directory`` were written (ns), 0 when missing: a stopped run, resumed, writes new ones,
    and the caches below then load them afresh instead of the checkpoint they had."""
    try:
        return (weights_dir(Path(directory)) / WEIGHTS_FILE).stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def cached_translator(directory: str, version: int) -> Translator:
    """One shared, read-only model per directory, version of its weights and process."""
    return Translator.load(Path(directory))


def load_translator(directory: str) -> Translator:
    return cached_translator(directory, weights_version(directory))


@st.cache_data(show_spinner="Translating…", max_entries=64)
def translate(
    directory: str, version: int, text: str, beam_size: int, length_penalty: float, n_best: int, name_guard: bool
) -> TextTranslation:
    """The translation of every piece of the text: one cached call per (model, text, decoding settings, guard)."""
    options = DecodeOptions(beam_size, length_penalty, n_best, name_guard=name_guard, marks=True)
    return translate_text(load_translator(directory), text, options)


@st.cache_data(show_spinner=False, max_entries=64)
def attention(directory: str, version: int, src_ids: tuple[int, ...], tokens: tuple[int, ...]) -> SentenceMaps:
    """The maps of one hypothesis of one sentence, computed when it is looked at."""
    return maps_of(load_translator(directory), list(src_ids), list(tokens))


def model_changed() -> None:
    """A model that reads another language: the text typed for the old one and its result go (the new model would
    translate them as if they were in its language, and the page would judge them so)."""
    request, picked = st.session_state.get("request"), st.session_state["model"]
    if not isinstance(request, Request):
        return
    before, now = languages(Path(request.model)), languages(picked.path)
    if before.known and now.known and before.src_code != now.src_code:
        del st.session_state["request"]
        st.session_state["source"] = st.session_state[KEPT_SOURCE] = ""


def model_choices() -> list[ModelChoice]:
    """The shipped default (LAB_MODEL_DIR overrides it) and every finished or stopped run (not one training now)."""
    runs = runs_folder()  # LAB_RUNS_DIR, read as the Train page reads it
    return find_models(shipped_model(), runs, {path.name for path, _ in live_runs(runs)}, other_shipped())


def model_picker() -> ModelChoice:
    """One of ``model_choices``; the Train page may have made one of them the default (after the regression gate).
    The pick outlives a visit to the Train page."""
    choices = model_choices()
    index = default_index(choices, runs_folder())
    if "model" not in st.session_state and KEPT_MODEL in st.session_state:  # back from another page
        index = next((i for i, c in enumerate(choices) if str(c.path) == st.session_state[KEPT_MODEL]), index)
    choice = st.sidebar.selectbox(
        "Model", choices, index=index, key="model", format_func=lambda c: c.label, on_change=model_changed
    )
    # Streamlit forgets a widget's value while another page runs: keep the pick under a key of our own.
    st.session_state[KEPT_MODEL] = str(choice.path)
    if choice.refused:
        st.error(f"{choice.label}: {choice.refused}")
    elif not choice.available:
        st.warning(
            f"The model `{repo_relative(choice.path)}` is not trained yet. Pick a finished run in the sidebar when there is one, or "
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
    """What the page asks for right now: the picked model, the text in the box, the decoding settings, the guard."""
    model = str(choice.path) if choice.available else ""
    guard = st.session_state.get(GUARD_KEY, True)
    return Request(model, choice.label, st.session_state.get("source", ""), *settings, name_guard=guard)


def submit(choice: ModelChoice, settings: tuple[int, float, int]) -> None:
    """Translate button: remember this session's request (text and settings at the moment of the click)."""
    st.session_state["request"] = page_request(choice, settings)


def use_example(choice: ModelChoice, settings: tuple[int, float, int]) -> None:
    """A guided example picked: in the box, translated at once, the maps opened in the view its hint speaks of."""
    picked = by_source(st.session_state.get("example") or "", languages(choice.path))
    if picked is not None:
        open_text(picked.source, choice, settings)
        show_view(picked.claim)


def open_text(text: str, choice: ModelChoice, settings: tuple[int, float, int], view: str = "") -> None:
    """A sentence picked in the sidebar: in the box, translated at once, the tab ``view`` open when one is named."""
    st.session_state["source"] = text
    st.session_state["request"] = page_request(choice, settings)
    if view:
        st.session_state["view"] = view


def open_source(text: str, request: Request) -> None:
    """A sentence picked in another view (a ranked line): in the box and translated with ``request``'s settings."""
    forget_picks()
    st.session_state["source"] = text
    st.session_state["request"] = replace(request, text=text)


def forget_picks() -> None:
    """Other text in the box: the sidebar's pickers no longer show a sentence it does not hold."""
    st.session_state["example"] = st.session_state["gold"] = None


KEPT_SOURCE = "kept_source"  # the Spanish text, kept while the Train page runs


def source_input(
    choice: ModelChoice, settings: tuple[int, float, int], langs: Languages
) -> tuple[DeltaGenerator, DeltaGenerator]:
    """The example pickers in the sidebar, the text box and Translate; returns the place under Translate (the source
    word by word) and the column beside the box (for the result, so that the maps below start high enough)."""
    st.sidebar.header("Examples")
    if examples := examples_for(langs):
        st.sidebar.selectbox(
            "Pick a guided example",
            [e.source for e in examples],
            index=None,
            placeholder="Choose a sentence…",
            help="Sentences the model translates correctly, each with something to look for in its maps.",
            key="example",
            on_change=use_example,
            args=(choice, settings),
        )
    else:
        st.sidebar.caption(no_examples_note(langs))
    with st.sidebar:
        gold_picker(langs, partial(open_text, choice=choice, settings=settings, view="Alignment"))
    box, beside = st.columns(2)
    if "source" not in st.session_state and KEPT_SOURCE in st.session_state:  # back from another page
        st.session_state["source"] = st.session_state[KEPT_SOURCE]
    box.text_area(
        source_label(langs),
        key="source",
        height=80,
        max_chars=5000,
        placeholder=placeholder(langs),
        help=KEEP_HELP,
        on_change=forget_picks,
    )
    # Streamlit forgets a widget's value while another page runs: keep the text under a key of our own.
    st.session_state[KEPT_SOURCE] = st.session_state["source"]
    box.button(
        "Translate",
        key="translate",
        type="primary",
        disabled=not choice.available,
        on_click=submit,
        args=(choice, settings),
    )
    return box.container(), beside


def translate_page() -> None:
    set_threads(os.environ.get("LAB_THREADS"))
    st.set_page_config(page_title="Translate · Translation lab", layout="wide")
    st.html(ROOM_FOR_MAPS)
    choice = model_picker()
    langs = languages(choice.path)
    st.title(title(langs))
    settings = decoding_settings()
    guard_switch(choice.path)
    if st.session_state.pop(ASKED, False) and choice.available:  # the Train page's "Compare with the default"
        sentence = st.session_state.get(KEPT_SOURCE) or next((e.source for e in examples_for(langs)), "")
        open_text(sentence, choice, settings, COMPARE_VIEW)
    first_visit = not {"request", "source", KEPT_SOURCE} & set(st.session_state)
    if first_visit and choice.available and examples_for(langs):  # the first screen opens on a worked example
        open_text(examples_for(langs)[0].source, choice, settings)
        show_view(examples_for(langs)[0].claim)
    under, beside = source_input(choice, settings, langs)
    request = st.session_state.get("request")
    if not isinstance(request, Request):
        pick = " (or pick an example in the sidebar)" if examples_for(langs) else ""
        beside.info(f"Type {with_article(langs.src)} sentence{pick} and press Translate.")
        return
    if not request.text.strip():
        beside.info(f"Nothing to translate yet: type {with_article(langs.src)} sentence first.")
        return
    langs = languages(Path(request.model))  # the result's model, which may no longer be the one picked
    show_translation(request, page_request(choice, settings), langs, beside, under)


def show_translation(
    request: Request, current: Request, langs: Languages, beside: DeltaGenerator, under: DeltaGenerator
) -> None:
    """``request``'s translation ``beside`` the text box, the source word by word ``under`` it, its maps and tabs
    (``current``: what the page asks now)."""
    try:
        version, r = weights_version(request.model), request
        key = (r.model, version, r.text, r.beam_size, r.length_penalty, r.n_best)
        result = translate(*key, r.name_guard)
    except ModelLoadError as err:
        st.error(f"This model cannot be loaded: {str(err).replace(str(request.model), repo_relative(request.model))}")
        return
    except MarkError as err:
        beside.error(f"Words to keep as typed: {err}.")
        return
    translator = load_translator(request.model)
    with beside:
        show_input_check(result, translator, request.model, version, langs)
        clicked = show_output(result, request, current, langs, translator)  # the words to click go under it
        guarded = result if r.name_guard or translator.guard is None else translate(*key, True)
        show_guard(result, translator, request, guarded)
    sentence = sentence_picker(result, langs)
    candidate = hypothesis_picker(sentence)
    with clicked:  # outside the maps' fragment, whose reruns would draw it again below itself
        show_word_alternatives(translator, request, sentence, candidate, langs, len(result.sentences) == 1)
    with under:  # the source as typed, its words lit from the words to click
        maps = attention(request.model, version, tuple(sentence.src_ids), tuple(candidate.tokens))  # the maps' own
        show_source_words(translator, request.model, sentence, candidate, maps, langs)
    show_study(translator, request, result, sentence, candidate, langs)


# The views under the maps, one open at a time (none at first): (title, module of views/, its view); each view takes
# the page's one ``TabContext``. A view's module (and what it imports) loads when it first opens, not with the first
# screen.
LOOK_CLOSER = "Each opens a view of this translation below the maps; click it again to close it."
VIEWS = (
    ("Alignment", "alignment_tab", "show_alignment"),
    ("Step by step", "steps_tab", "show_steps"),
    ("Arithmetic of a weight", "arithmetic_tab", "show_arithmetic"),
    ("What if", "whatif_tab", "show_whatif"),
    ("Where did it learn this?", "neighbours_tab", "show_neighbours"),
    ("Teach a correction", "teach_tab", "show_teach"),
    (COMPARE_VIEW, "compare_tab", "show_compare"),
    ("Architecture", "architecture", "show_architecture_tab"),
    ("All heads", "maps", "show_all_heads"),
    ("Positional encoding", "architecture", "show_positional"),
    ("Find the bad translations", "ranking_tab", "show_ranking"),
    ("Behaviour tests", "behaviour_tab", "show_behaviour"),
    ("Watch it learn", "toy_tab", "show_toy"),
)


@st.fragment
def show_study(
    translator: Translator,
    request: Request,
    result: TextTranslation,
    sentence: Translation,
    candidate: Candidate,
    langs: Languages,
) -> None:
    """The maps, the hint under them and the open view: a fragment, so that a layer, a head, a followed token or a
    view reruns these alone, not the translation above them."""
    if st.session_state.get("request") != request:  # a view asked for another sentence (a ranked line)
        st.rerun()  # the whole page, with its new translation
    version = weights_version(request.model)
    maps = attention(request.model, version, tuple(sentence.src_ids), tuple(candidate.tokens))
    for problem in problems(maps):
        st.error(f"Broken attention invariant: {problem}")
    display, under = show_maps(maps, langs)  # a layer and a head per kind; other tabs follow cross's
    with under:  # right under the maps it speaks of
        show_example_hint(result, maps, langs)
    ctx = TabContext(
        translator=translator,
        request=request,
        sentence=sentence,
        candidate=candidate,
        maps=maps,
        display=display,
        langs=langs,
        open_source=partial(open_source, request=request),
        models=model_choices,
        load=load_translator,
    )
    picked = st.pills("Look closer", [name for name, _, _ in VIEWS], key="view", help=LOOK_CLOSER)  # none at first
    for name, module, view in VIEWS:
        if name == picked:  # only the open view runs: the all-heads grid is computed only when asked for
            with st.container(key="open_view"):
                getattr(importlib.import_module(f"views.{module}"), view)(ctx)


def main() -> None:
    """Two pages, named in the sidebar: Translate (this file, the default) and Train."""
    translate = st.Page(translate_page, title="Translate", default=True)  # no icons: fetched from the internet
    st.session_state[TRANSLATE_PAGE] = translate  # for the Train page's "Compare with the default"
    st.navigation([translate, st.Page("pages/1_Train.py", title="Train")]).run()


main()
