"""The What if tab: change something in the model's input or inside the model, and watch the translation change.

One tool runs at a time (the page's work stays bounded); each is computed by the model itself (``lab/whatif``).
"""

from __future__ import annotations

import streamlit as st

from lab.attention.map_views import map_view
from lab.attention.sentence_maps import SentenceMaps, pick
from lab.attention.translate_with_maps import maps_of
from lab.page.direction import Languages
from lab.page.request import Request
from lab.whatif.forced_prefix import Forced, force, prefix_ids
from lab.whatif.steering import MAX_SOURCE
from lab.whatif.subject import Subject
from translate.translator import DecodeOptions, Translator
from views.map_chart import heatmap
from views.whatif_attribution import show_attribution
from views.whatif_heads import show_heads
from views.whatif_source import show_source_edit

OTHER_TOOLS = ("Switch heads off", "Attribution")


def tools(langs: Languages) -> tuple[str, ...]:
    """The tools' names in the model's languages: "Force the English", "Change the Spanish", then the others."""
    return (f"Force the {langs.tgt}", f"Change the {langs.src}", *OTHER_TOOLS)


@st.cache_data(show_spinner="Continuing from your prefix…", max_entries=32)
def forced(
    directory: str,
    src_ids: tuple[int, ...],
    prefix: tuple[int, ...],
    original: tuple[int, ...],
    options: DecodeOptions,
    _translator: Translator,
) -> Forced:
    return force(_translator.model, list(src_ids), list(prefix), list(original), options)


def forced_for(subject: Subject, prefix: list[int]) -> Forced:
    """``forced`` for the page's sentence, output and search."""
    return forced(
        subject.directory,
        subject.src_ids,
        tuple(prefix),
        subject.tokens,
        subject.options,
        _translator=subject.translator,
    )


@st.cache_data(show_spinner=False, max_entries=32)
def forced_maps(
    directory: str, src_ids: tuple[int, ...], tokens: tuple[int, ...], _translator: Translator
) -> SentenceMaps:
    """The maps of the forced output: one teacher-forced pass over exactly its tokens."""
    return maps_of(_translator, list(src_ids), list(tokens))


def forced_cross_map(subject: Subject, tokens: list[int], langs: Languages) -> None:
    """Cross-attention of the new output at the page's decoder layer, mean of heads, on one 0–1 scale."""
    maps = forced_maps(subject.directory, subject.src_ids, tuple(tokens), _translator=subject.translator)
    view = map_view(maps, "cross")  # rows labelled as in the maps above: "▁The → ▁black"
    which = f"layer {subject.layer + 1}, mean of heads"
    chart = heatmap(view, pick(view.weights, subject.layer, None), "Cross-attention of the new output", which, langs)
    st.altair_chart(chart, key="whatif_forced_map")


def log_prob_line(label: str, log_prob: float) -> str:
    return f"{label}: log p = {log_prob:.3f}"


def show_beside_original(
    subject: Subject, result: Forced, labels: tuple[str, str], key: str, titles: tuple[str, str] = ("", "")
) -> None:
    """The model's output and a forced one side by side, each with its teacher-forced log-probability and the
    difference; ``key`` names the forced output's container (tests find it by it)."""
    tok = subject.translator.tokenizer
    left, right = st.columns(2)
    for column, title in zip((left, right), titles, strict=True):
        if title:
            column.markdown(f"**{title}**")
    left.code(tok.decode_tgt(list(subject.tokens)), language=None, wrap_lines=True)
    left.text(log_prob_line(labels[0], result.original_log_prob))
    with right.container(key=key):
        st.code(tok.decode_tgt(result.tokens), language=None, wrap_lines=True)
    difference = result.log_prob - result.original_log_prob
    right.text(f"{log_prob_line(labels[1], result.log_prob)}  (Δ {difference:+.3f})")
    if result.truncated:
        right.warning("The continuation stopped at the output length limit.")


def show_forced(subject: Subject, langs: Languages) -> None:
    """Force the English: the learner's prefix, then the model's continuation."""
    st.caption(
        f"Type how the {langs.tgt} should begin; the model is made to write exactly that, then continues with the "
        f"page's {subject.search_name}. Both outputs are scored by the model (one teacher-forced pass each)."
    )
    tok = subject.translator.tokenizer
    text = st.text_input(f"{langs.tgt} start", key="whatif_prefix", placeholder="e.g. The dog")
    if not text.strip():
        st.info(f"Type the start of an {langs.tgt} translation above.")
        return
    prefix = prefix_ids(tok, text)
    result = forced_for(subject, prefix)
    st.caption("Forced subwords: " + " ".join(tok.tgt_pieces(result.prefix)))
    if result.cut_prefix:
        st.warning("The prefix is longer than the output this sentence may have: only its beginning was forced.")
    show_beside_original(
        subject,
        result,
        ("original", "forced"),
        "whatif_forced_output",
        ("The model's output", "Forced, then continued"),
    )
    st.caption(
        "A lower log-probability means the model finds your version less likely, not that it is a worse "
        "translation. Forcing the model's own beginning gives back its own output (tested)."
    )
    forced_cross_map(subject, result.tokens, langs)


def show_whatif(
    translator: Translator,
    request: Request,
    src_ids: list[int],
    tokens: list[int],
    maps: SentenceMaps,
    dec: int,
    langs: Languages,
) -> None:
    """The tool picker and the tool chosen, for the hypothesis ``tokens`` of the sentence ``src_ids`` of ``request``."""
    st.caption(
        "Ask the model “what if?”: change its input or its inside and see what it does. Every number here is "
        "computed by the model itself; none of it proves why the model translates as it does."
    )
    if len(src_ids) > MAX_SOURCE:
        st.info(f"This sentence has {len(src_ids)} subwords; the what-if tools take up to {MAX_SOURCE}.")
        return
    options = DecodeOptions(beam_size=request.beam_size, length_penalty=request.length_penalty)
    subject = Subject(translator, request.model, tuple(src_ids), tuple(tokens), maps, options, dec)
    names = tools(langs)
    tool = st.radio("Tool", names, key="whatif_tool", horizontal=True)
    shows = (show_forced, show_source_edit, show_heads, show_attribution)
    dict(zip(names, shows, strict=True)).get(tool or names[0], show_forced)(subject, langs)
