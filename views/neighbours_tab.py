"""The Where did it learn this? tab: the training pairs whose encoder states are nearest to the translated
sentence's, and those whose decoder state is nearest to one chosen output token's (``lab/neighbours``, after
Seq2Seq-Vis). The model's sentence index is loaded (the shipped model's ships with it), or built once, in a
background thread, one per model; the page polls its progress."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import streamlit as st

from lab.neighbours import lookup
from lab.neighbours.index_build import IndexBuild
from lab.neighbours.lookup import SEED as SAMPLE_SEED
from lab.neighbours.lookup import Projection, map_of, project, training_map
from lab.neighbours.sentence_index import MAX_PAIRS, SentenceIndex
from lab.page.direction import Languages
from translate.settings import repo_relative, runs_folder
from translate.translator import Translation, Translator
from views import heavy_slot
from views.tab_context import TabContext

POLL_S = 2.0  # the progress bar's refresh while the index is built
LOAD_S = 3.0  # how long a new build is waited for before the progress bar is shown (loading a file takes < 1 s)
KEPT = 3  # models whose index is kept (or built) at once: about 30 MB each for the shipped model
ABOUT = (
    "Which training pairs is the model leaning on? For the translated sentence, the {k} training pairs whose "
    "encoder states (averaged over the source's words) are nearest to this sentence's; for one output token, the "
    "pairs whose decoder state — the last decoder layer's output just before a token is chosen, on the pair's own "
    "{tgt} — is nearest to the state that chose it, that pair's token marked ⟦like this⟧. Nearness is cosine "
    "similarity (1 = same direction)."
)
CAVEAT = (
    "What nearness does not prove: similar states are not a causal explanation. These pairs are not *why* the model "
    "says this — it learned from all its training pairs at once, and may have learned this from others than those "
    "shown, or from pairs not indexed; a near pair can also translate differently. The decoder states compared are "
    f"those of the {lookup.CANDIDATES} pairs nearest by the sentence, not every pair's: a nearer one may be missed."
)


@st.cache_resource
def builds() -> tuple[threading.Lock, dict[str, IndexBuild]]:
    """This server's index builds by model folder, least recently asked for first, and the lock every session
    takes to start one."""
    return threading.Lock(), {}


def index_build(directory: str, translator: Translator) -> IndexBuild:
    """The model folder's index, started in the background on first look; again when the page's model is a new
    one (its weights changed, so it was loaded again), after the old build is cancelled and has ended. At most
    KEPT are kept: the least recently asked for is dropped, its build cancelled."""
    lock, known = builds()
    with lock:
        build = known.pop(directory, None)
        if build is not None and build.translator is translator:
            known[directory] = build  # now the most recent
            return build
        if build is not None:
            build.cancel()
        while len(known) >= KEPT:
            known.pop(next(iter(known))).cancel()
        slot = (heavy_slot.slot, heavy_slot.share)  # the build is a heavy tool that lets others in between batches
        known[directory] = IndexBuild(translator, Path(directory), runs_folder(), build, slot).start()
        return known[directory]


def token_choice(translator: Translator, tokens: list[int]) -> int:
    """The output token to look up (a selectbox of the translation's tokens, EOS left out unless alone)."""
    pieces = translator.tokenizer.tgt_pieces(tokens)
    choices = list(range(max(len(tokens) - 1, 1)))
    if st.session_state.get("neighbours_token") not in choices:  # picked in a longer translation
        st.session_state.pop("neighbours_token", None)
    return st.selectbox(
        "Output token",
        choices,
        format_func=lambda t: f"{t + 1}: {pieces[t]}",
        key="neighbours_token",
        help="The decoder state that chose this token is compared with the training pairs' decoder states.",
    )


def show_found(
    build: IndexBuild, translator: Translator, sentence: Translation, tokens: list[int], langs: Languages
) -> None:
    """The two neighbour tables for the translation on screen."""
    index = build.index
    assert index is not None
    info = index.info
    how = f"built in {info.seconds:.0f} s, {info.built}" + (", loaded from its file" if build.loaded else "")
    sample = f" (a fixed sample of {info.pairs:,} of {info.available:,})" if info.pairs < info.available else ""
    st.caption(
        f"Index of `{repo_relative(info.model)}` (weights sha256 {info.weights_sha256[:12]}…): {info.pairs:,} pairs{sample}, "
        f"{info.origin}. One encoder vector per pair on its {info.dims} main directions in int8 "
        f"({index.codes.nbytes / 1e6:.1f} MB); {how}. The {lookup.CANDIDATES} nearest by it are encoded and decoded "
        "again here: their similarities below are exact."
    )
    position = token_choice(translator, tokens)
    start = time.perf_counter()
    vector, forced = lookup.query_states(translator.model, sentence.src_ids, tokens)
    found = sentence_candidates(index, translator, sentence.src_ids, vector)
    sentences, states = lookup.sentence_neighbours(found, vector), lookup.token_neighbours(found, forced[position])
    seconds = time.perf_counter() - start
    st.markdown("**Nearest training pairs by the encoder: the whole sentence**")
    with st.container(key="neighbours_sentence"):
        st.dataframe(lookup.table(index, sentences, translator.tokenizer, langs.src, langs.tgt), hide_index=True)
    piece = translator.tokenizer.tgt_pieces([tokens[position]])[0]
    st.markdown("**Nearest training pairs by the decoder: the state that chose the token**")
    st.caption(f"Token {position + 1}, `{piece}`.")
    with st.container(key="neighbours_token_table"):
        st.dataframe(lookup.table(index, states, translator.tokenizer, langs.src, langs.tgt), hide_index=True)
    st.caption(f"Both looked up in {seconds:.2f} s ({lookup.CANDIDATES} pairs teacher-forced once for this sentence).")
    st.caption(CAVEAT)
    show_map(index, sentences, vector, sentence.source, langs)


@st.cache_resource(max_entries=KEPT)
def projection(sha256: str, _index: SentenceIndex) -> Projection:
    """One map per index (its weights' sha256): fitted on every pair, 0.1 s for the shipped model's."""
    return project(_index)


def show_map(
    index: SentenceIndex, nearest: list[lookup.Neighbour], vector: np.ndarray, source: str, langs: Languages
) -> None:
    """The training set as a map, the sentence and its nearest pairs on it."""
    fit = projection(index.info.weights_sha256, index)
    frame = map_of(fit, index, nearest, vector, source)
    st.markdown("**Where the sentence sits among the training sentences**")
    title = f"{len(fit.rows):,} of {index.info.pairs:,} indexed pairs (sample seed {SAMPLE_SEED})"
    st.altair_chart(training_map(frame, title, langs.src, langs.tgt), key="training_map", width="stretch")
    st.caption(
        f"Each dot is a training pair's encoder vector on the two directions along which they vary most (a PCA of the "
        f"index); the two keep {fit.explained:.0%} of the index's variance, less of the model's vectors', so near on "
        "the map is not near in the model: the tables above measure that. Colour: the source's length in words. The "
        "cross is your sentence, placed as its pair would be; red rings, the nearest pairs by the encoder. Hover a "
        "point for its pair."
    )


def sentence_candidates(
    index: SentenceIndex, translator: Translator, src_ids: list[int], vector: np.ndarray
) -> lookup.Candidates:
    """The sentence's candidates, kept in the session for the next output token picked (they do not depend on it)."""
    key = (index.info.weights_sha256, tuple(src_ids))
    kept = st.session_state.get("neighbours_candidates")
    if kept is None or kept[0] != key:
        kept = st.session_state["neighbours_candidates"] = (key, lookup.candidates(index, translator, vector))
    return kept[1]


def show_progress(build: IndexBuild) -> None:
    """The build's progress bar, redrawn every POLL_S; the whole tab again once it has finished."""
    if build.finished:
        st.rerun()
    share = build.done / build.total if build.total else 0.0
    what = f"{build.done:,} of {build.total:,} pairs" if build.total else "reading the training pairs or the index"
    left = "" if build.eta is None else f", about {build.eta / 60:.1f} min left at the rate so far"
    st.progress(share, text=f"Building this model's index: {what}, {time.perf_counter() - build.started:.0f} s{left}")


def show_neighbours(ctx: TabContext) -> None:
    """The nearest training pairs of the hypothesis shown, once the model's index is built."""
    st.caption(ABOUT.format(k=lookup.K, tgt=ctx.langs.tgt))
    build = index_build(ctx.request.model, ctx.translator)
    build.wait(timeout=max(0.0, build.started + LOAD_S - time.perf_counter()))  # a file: shown in this run
    if build.error is not None:
        st.warning(f"No index for this model: {build.error}")
        return
    if not build.finished:
        st.caption(
            f"The shipped model's index ships with it; another model's is built once (its encoder over at most "
            f"{MAX_PAIRS:,} training pairs: docs/views.md) and kept beside the run or in the runs folder. The page "
            "stays usable meanwhile: look at the other views and come back."
        )
        st.fragment(run_every=POLL_S)(show_progress)(build)
        return
    show_found(build, ctx.translator, ctx.sentence, ctx.candidate.tokens, ctx.langs)
