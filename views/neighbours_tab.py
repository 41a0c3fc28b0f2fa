"""The Where did it learn this? tab: the training pairs whose encoder states are nearest to the translated
sentence's, and those whose decoder state is nearest to one chosen output token's (``lab/neighbours``, after
Seq2Seq-Vis). The model's index is built once per server in a background thread; the page polls its progress."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from lab.neighbours.hidden_states import POSITIONS
from lab.neighbours.index_build import IndexBuild
from lab.neighbours.lookup import K, Neighbour, marked, neighbours_of
from lab.neighbours.state_index import NeighbourIndex
from lab.neighbours.training_pairs import MAX_PAIRS
from lab.page.direction import Languages
from lab.page.request import Request
from translate.settings import runs_folder
from translate.translator import Candidate, Translation, Translator

POLL_S = 1.0  # the progress bar's refresh while the index is built
KEPT = 2  # indexes kept in memory: about 300 MB each for the shipped model
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
    "shown, or from pairs not indexed; a near pair can also translate differently. Only the first, last and a few "
    f"middle tokens of each pair ({POSITIONS} at most) are indexed, so a nearer decoder state may be missing."
)


@st.cache_resource
def builds() -> tuple[threading.Lock, dict[str, IndexBuild]]:
    """This server's index builds by model folder, and the lock every session takes to start one."""
    return threading.Lock(), {}


def index_build(directory: str, translator: Translator) -> IndexBuild:
    """The model folder's index, started in the background on first look; again when the page's model is a new
    one (its weights changed, so it was loaded again). At most KEPT indexes stay in memory."""
    lock, known = builds()
    with lock:
        build = known.get(directory)
        if build is None or build.translator is not translator:
            known.pop(directory, None)
            while len(known) >= KEPT:
                known.pop(next(iter(known)))  # the oldest: dicts keep their order of insertion
            build = known[directory] = IndexBuild(translator, Path(directory), runs_folder()).start()
        return build


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


def table(index: NeighbourIndex, found: list[Neighbour], translator: Translator, langs: Languages) -> pd.DataFrame:
    """One row per neighbour: its similarity, its Spanish and its English (the decoder state's token marked)."""
    tokenizer = translator.tokenizer
    return pd.DataFrame(
        {
            "similarity": [round(n.similarity, 3) for n in found],
            langs.src: [index.sources[n.pair] for n in found],
            langs.tgt: [
                index.targets[n.pair] if n.position is None else marked(tokenizer, index.targets[n.pair], n.position)
                for n in found
            ],
        }
    )


def describe(build: IndexBuild, index: NeighbourIndex) -> str:
    info = index.info
    how = f"built in {info.seconds:.0f} s, {info.built}" + (", loaded from its cache file" if build.loaded else "")
    sample = f" (a fixed sample of {info.pairs:,} of {info.available:,})" if info.pairs < info.available else ""
    return (
        f"Index of `{info.model}` (weights sha256 {info.weights_sha256[:12]}…): {info.pairs:,} pairs{sample}, "
        f"{info.origin}. {info.pairs:,} sentence vectors and {info.states:,} decoder states (at most "
        f"{info.positions} per pair), {index.nbytes / 1e6:.0f} MB in float16; {how}."
    )


def show_found(
    build: IndexBuild, translator: Translator, src_ids: list[int], tokens: list[int], langs: Languages
) -> None:
    """The two neighbour tables for the translation on screen."""
    index = build.index
    assert index is not None
    st.caption(describe(build, index))
    position = token_choice(translator, tokens)
    start = time.perf_counter()
    sentences, states = neighbours_of(index, translator.model, src_ids, tokens, position)
    seconds = time.perf_counter() - start
    st.markdown("**Nearest training pairs by the encoder: the whole sentence**")
    with st.container(key="neighbours_sentence"):
        st.dataframe(table(index, sentences, translator, langs), hide_index=True)
    piece = translator.tokenizer.tgt_pieces([tokens[position]])[0]
    st.markdown("**Nearest training pairs by the decoder: the state that chose the token**")
    st.caption(f"Token {position + 1}, `{piece}`.")
    with st.container(key="neighbours_token_table"):
        st.dataframe(table(index, states, translator, langs), hide_index=True)
    st.caption(f"Both looked up in {seconds:.2f} s (one teacher-forced pass and two matrix-vector products).")
    st.caption(CAVEAT)


def show_progress(build: IndexBuild) -> None:
    """The build's progress bar, redrawn every POLL_S; the whole tab again once it has finished."""
    if build.finished:
        st.rerun()
    share = build.done / build.total if build.total else 0.0
    what = f"{build.done:,} of {build.total:,} pairs" if build.total else "reading the training pairs"
    elapsed = time.perf_counter() - build.started
    st.progress(share, text=f"Building this model's index: {what}, {elapsed:.0f} s")


def show_neighbours(
    translator: Translator, request: Request, sentence: Translation, candidate: Candidate, langs: Languages
) -> None:
    """The nearest training pairs of ``candidate`` (a translation of ``sentence``), once the model's index is built."""
    st.caption(ABOUT.format(k=K, tgt=langs.tgt))
    build = index_build(request.model, translator)
    if build.error is not None:
        st.warning(f"No index for this model: {build.error}")
        return
    if not build.finished:
        st.caption(
            f"The index is built once per model (at most {MAX_PAIRS:,} pairs; for the shipped model about 4 minutes "
            "on one core of an idle 2-core machine, 12 beside a training job: docs/views.md) and kept beside the run "
            "or in the runs folder; the page stays usable meanwhile: look at the other tabs and come back."
        )
        st.fragment(run_every=POLL_S)(show_progress)(build)
        return
    show_found(build, translator, sentence.src_ids, candidate.tokens, langs)
