"""The download tab: the maps of the shown hypothesis as JSON, and the charts drawn as HTML and PNG."""

from __future__ import annotations

import altair as alt
import streamlit as st

from lab.explain import Candidate, Sentence
from lab.maps import SentenceMaps, to_json
from viz.export import chart_html, chart_png, side_by_side


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
