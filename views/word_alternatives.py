"""Click a word of the translation: what else the model could write there, given the words before it; pick one, and
the model writes the rest of the sentence after it (the prefix kept, the choice forced, ``lab/whatif/forced_prefix``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path

import streamlit as st

from lab.attention.map_views import Followed, map_chart, map_view
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.step_choices import Choice, choices, prefix_with
from lab.attention.translate_with_maps import maps_of, shown
from lab.page.direction import Languages
from lab.page.output_words import OutputWord, output_words
from lab.page.request import Request
from lab.whatif.forced_prefix import Forced, force
from lab.whatif.steering import MAX_SOURCE
from translate.translator import Candidate, DecodeOptions, Translation, Translator, guarded_result
from views.maps import FOLLOW
from views.word_shading import pill_shades, shaded_line, show_legend


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


def key_of(src_ids: list[int], tokens: list[int]) -> str:
    """The word pickers' keys: their own for each sentence and output, so a new output starts unpicked."""
    return hashlib.blake2b(repr((src_ids, tokens)).encode(), digest_size=6).hexdigest()


def words_key(src_ids: list[int], tokens: list[int]) -> str:
    """The key of the words to click (``st.pills``) of one sentence and output (views/source_line.py lights
    the source words from their pills)."""
    return f"word_{key_of(src_ids, tokens)}"


def literal(text: str) -> str:
    """``text`` as a pill shows it: Streamlit reads a pill's label as Markdown, so every sign of it is escaped."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~<>$:=&])", r"\\\1", text)


def follow_word(key: str, words: list[OutputWord]) -> None:
    """A word clicked: its first piece followed in the maps (views/maps.py), which light its row. The click reruns
    the page: measured (``workshop bench word_click``), half the time of rerunning this panel and the maps as named
    fragments from this callback."""
    w = st.session_state.get(key)
    st.session_state[FOLLOW] = None if w is None else Followed("tgt", words[w].positions[0])


def show_word_alternatives(
    translator: Translator, request: Request, sentence: Translation, candidate: Candidate, langs: Languages, alone: bool
) -> None:
    """The words of the output shown, to click (``alone``: the translation of a one-piece text, in its box, as plain
    text too, and their legend); a word's alternatives, to pick; the sentence rewritten after it."""
    src_ids, tokens, tok = sentence.src_ids, candidate.tokens, translator.tokenizer
    if len(src_ids) > MAX_SOURCE:
        st.caption(f"Alternatives to a word take sentences of up to {MAX_SOURCE} subwords.")
        return
    words, key = output_words(tok, candidate, sentence.guarded), words_key(src_ids, tokens)
    with st.container(key="translation" if alone else None, border=alone):
        w = st.pills(
            "Each word shaded by how sure the model was of it; click one for what else it could write there",
            range(len(words)),
            format_func=lambda i: literal(words[i].text),
            key=key,
            on_change=follow_word,
            args=(key, words),
            label_visibility="collapsed" if alone else "visible",  # the legend says it under the translation
        )
        st.html(pill_shades(key, words))  # each word's pill in its shade
        if alone:
            st.text(shown(candidate.text.strip()))  # plain text, to copy (small: views/word_shading.PLAIN)
    if alone:
        show_legend(Path(request.model))
    if candidate is not sentence.candidates[0]:
        st.caption(f"Hypothesis #{sentence.candidates.index(candidate) + 1}, picked below.")
    if w is None:
        return
    word, start = words[w], words[w].positions[0]
    choice = step_choices(request.model, tuple(src_ids), tuple(tokens), _translator=translator)[start]
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
    if a is not None:
        show_rewritten(translator, request, sentence, tokens, prefix_with(tokens, start, choice.top_ids[a]), langs)


def show_rewritten(
    translator: Translator,
    request: Request,
    sentence: Translation,
    original: list[int],
    prefix: list[int],
    langs: Languages,
) -> None:
    """The output continued from ``prefix`` with the page's search, its log-probability beside the ``original``
    output's, and its cross-attention (last layer, mean of heads)."""
    options = DecodeOptions(beam_size=request.beam_size, length_penalty=request.length_penalty)
    src_ids, tokens = tuple(sentence.src_ids), tuple(original)
    result, maps = forced(request.model, src_ids, tuple(prefix), tokens, options, _translator=translator)
    text = translator.tokenizer.decode_tgt(result.tokens)
    new = Candidate(
        result.tokens, result.log_prob, result.log_prob, result.truncated, result.token_log_probs, text=text
    )
    written = replace(sentence, candidates=[new])
    back, why = guarded_result(sentence.guarded, written) if sentence.guarded else (written, "")
    text = back.text if back is not None else text  # the guard's originals put back, as in the translation
    with st.container(key="rewritten", border=True):  # as the translation is shown (views/result.py)
        st.html(shaded_line(output_words(translator.tokenizer, new, sentence.guarded if back else None)))
        st.text(text)
    search = "greedy search" if options.beam_size <= 1 else f"beam search (beam {options.beam_size})"
    piece = literal(translator.tokenizer.tgt.id_to_piece(prefix[-1]).replace("▁", ""))
    st.caption(
        f"The words before it kept, {piece} forced, the rest written by the model ({search}). log p = "
        f"{result.log_prob:.3f} against the original's {result.original_log_prob:.3f} (Δ "
        f"{result.log_prob - result.original_log_prob:+.3f}; lower: less likely to the model, not a worse translation)."
        + (f" Shown as the model wrote it: {literal(why)}." if why else "")
    )
    if result.truncated:
        st.warning("The rest stopped at the output length limit.")
    with st.expander("Cross-attention of the new translation"):
        view, layer = map_view(maps, "cross"), translator.model.config.n_decoder_layers - 1
        title, which = "Cross-attention of the new translation", f"layer {layer + 1} (the last), mean of heads"
        st.altair_chart(map_chart(view, layer, None, title, which, langs), key="rewritten_map")
