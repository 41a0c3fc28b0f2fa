"""Click a word of the translation: what else the model could write there, given the words before it; pick one, and
the model writes the rest of the sentence after it (the prefix kept, the choice forced, ``lab/whatif/forced_prefix``).
"""

from __future__ import annotations

import hashlib
import re

import streamlit as st

from lab.attention.map_views import map_view
from lab.attention.sentence_maps import SentenceMaps, pick
from lab.attention.step_choices import Choice, choices, prefix_with
from lab.attention.translate_with_maps import maps_of
from lab.page.direction import Languages
from lab.page.output_words import output_words
from lab.whatif.forced_prefix import Forced, force
from lab.whatif.steering import MAX_SOURCE
from lab.whatif.subject import Subject
from translate.name_guard import Guarded
from translate.translator import Candidate, DecodeOptions, Translator
from views.map_chart import heatmap


@st.cache_data(show_spinner=False, max_entries=32)
def step_choices(
    directory: str, src_ids: tuple[int, ...], tokens: tuple[int, ...], _translator: Translator
) -> list[Choice]:
    """The top candidates at every position of the output: one teacher-forced pass."""
    return choices(_translator.model, _translator.tokenizer, list(src_ids), list(tokens))


@st.cache_data(show_spinner="Writing the rest…", max_entries=32)
def forced(
    directory: str,
    src_ids: tuple[int, ...],
    prefix: tuple[int, ...],
    tokens: tuple[int, ...],
    options: DecodeOptions,
    _translator: Translator,
) -> tuple[Forced, SentenceMaps]:
    """The output continued from ``prefix`` with the page's search, scored beside ``tokens``, and its maps."""
    result = force(_translator.model, list(src_ids), list(prefix), list(tokens), options)
    return result, maps_of(_translator, list(src_ids), result.tokens)


def key_of(subject: Subject) -> str:
    """The word pickers' keys: their own for each sentence and output, so a new output starts unpicked."""
    return hashlib.blake2b(repr((subject.src_ids, subject.tokens)).encode(), digest_size=6).hexdigest()


def literal(text: str) -> str:
    """``text`` as a pill shows it: Streamlit reads a pill's label as Markdown, so every sign of it is escaped."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~<>$:=&])", r"\\\1", text)


def restored(text: str, guarded: Guarded | None) -> tuple[str, str]:
    """``text`` with the name guard's originals put back, and why not when they cannot be."""
    if guarded is None or not guarded.swaps:
        return text, ""
    back, why = guarded.restore(text)
    return (back, "") if back is not None else (text, f"shown as the model wrote it: {why}")


@st.fragment  # a click here reruns this panel alone, not the page and its maps
def show_word_alternatives(subject: Subject, candidate: Candidate, guarded: Guarded | None, langs: Languages) -> None:
    """The words of the output shown, to click; a word's alternatives, to pick; the sentence rewritten after it."""
    if len(subject.src_ids) > MAX_SOURCE:
        st.caption(f"Alternatives to a word take sentences of up to {MAX_SOURCE} subwords.")
        return
    tok = subject.translator.tokenizer
    words = output_words(tok, candidate, guarded)
    key = key_of(subject)
    w = st.pills(
        "Click a word: what else could the model write there?",
        range(len(words)),
        format_func=lambda i: literal(words[i].text),
        key=f"word_{key}",
    )
    if w is None:
        return
    word, start = words[w], words[w].positions[0]
    choice = step_choices(subject.directory, subject.src_ids, subject.tokens, _translator=subject.translator)[start]
    first = f" (its first piece, {literal(choice.token)})" if len(word.positions) > 1 else ""
    if word.stand_in:
        st.caption(f"“{literal(word.text)}” was put back by the name guard; the model wrote {word.stand_in} here.")
    pieces = [tok.tgt.id_to_piece(i).replace("▁", "") or "▁" for i in choice.top_ids]
    a = st.pills(
        f"Instead of “{literal(word.text)}”{first}, given the words before it, the model's top {len(pieces)}:",
        range(len(pieces)),
        format_func=lambda i: f"{literal(pieces[i])} · {choice.top[i][1]:.2f}",
        key=f"alternative_{key}_{w}",
    )
    if a is None:
        return
    prefix = prefix_with(list(subject.tokens), start, choice.top_ids[a])
    result, maps = forced(
        subject.directory,
        subject.src_ids,
        tuple(prefix),
        subject.tokens,
        subject.options,
        _translator=subject.translator,
    )
    text, why = restored(tok.decode_tgt(result.tokens), guarded)
    with st.container(key="rewritten"):
        st.code(text, language=None, wrap_lines=True)
    difference = result.log_prob - result.original_log_prob
    st.caption(
        f"The words before it kept, {literal(pieces[a])} forced, the rest written by the model ({subject.search_name}). "
        f"log p = {result.log_prob:.3f} against the original's {result.original_log_prob:.3f} (Δ {difference:+.3f}; "
        "lower: less likely to the model, not a worse translation)."
        + (f" {literal(why[:1].upper() + why[1:])}." if why else "")
    )
    if result.truncated:
        st.warning("The rest stopped at the output length limit.")
    with st.expander("Cross-attention of the new translation"):
        view = map_view(maps, "cross")
        which = f"layer {subject.layer + 1}, mean of heads"
        chart = heatmap(
            view, pick(view.weights, subject.layer, None), "Cross-attention of the new translation", which, langs
        )
        st.altair_chart(chart, key="rewritten_map")
