"""Reading aids above the maps: follow one token through every view, and what the special tokens mean."""

from __future__ import annotations

import streamlit as st

from data.case_markup import MARK
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.token_focus import Followed, describe, options
from lab.page.direction import Languages
from lab.page.labels import legend_markdown


def follow_picker(maps: SentenceMaps, langs: Languages) -> Followed | None:
    """Pick a token (or click a row of a map) to light its rows and columns in every view."""
    sentence = (tuple(maps.src), tuple(maps.tgt_out))
    token = st.session_state.get("follow")
    if st.session_state.get("follow_sentence") != sentence or (token is not None and token not in options(maps)):
        st.session_state["follow"] = None  # a token of another sentence: follow nothing
        st.session_state["follow_sentence"] = sentence
    return st.selectbox(
        "Follow a token",
        [None, *options(maps)],
        key="follow",
        placeholder="nothing (click a row of a map)",  # None in the session reads as no choice: say what it means
        format_func=lambda t: (
            "nothing (click a row of a map)" if t is None else describe(maps, t, langs.src, langs.tgt)
        ),
        help="Lights the token's row (where it is the query) and column (where it is a key) in every view it is in, "
        f"and in the all-heads grid; the rest is dimmed. A token of the {langs.src} sentence is in the encoder map "
        f"and the columns of cross-attention, one of the {langs.tgt} in masked self-attention and the rows of "
        "cross-attention. Clicking a cell of a map follows that row's token.",
    )


def show_legend(maps: SentenceMaps, langs: Languages) -> None:
    """What the special pieces mean; the case mark's line only when this sentence has one."""
    case_mark = MARK in maps.src
    with st.expander(f"Reading the tokens: ▁, <s>, </s>, <unk>{', ' + MARK if case_mark else ''}"):
        st.markdown(legend_markdown(case_mark, langs.src_code))
