"""The positional encoding tab: the signal added to each token's embedding, as a map and as curves."""

from __future__ import annotations

import streamlit as st

from lab.explain import positional_table
from lab.maps import SentenceMaps
from translate.translator import Translator
from views import teaching as teach
from viz.positional import positional_chart, positional_frame


def show_positional(translator: Translator, maps: SentenceMaps) -> None:
    st.caption(
        "The position signal added to each token's embedding before the first layer, one row per position of "
        "this sentence: slow and fast waves let the model tell positions apart and compare distances. Positions "
        "count from 0 as in the formula sin(pos / 10000^(2i/d_model)): position 0 is the token the maps number 1."
    )
    table = positional_table(translator, len(maps.src))
    st.altair_chart(positional_chart(positional_frame(table), "Positional encoding"), key="positional", width="stretch")
    teach.show_positional_curves(table)
