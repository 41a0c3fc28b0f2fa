"""The download tab: the maps of the shown hypothesis as JSON, and the charts drawn as HTML and PNG."""

from __future__ import annotations

import altair as alt
import streamlit as st

from lab.attention.explain import Candidate, Sentence
from lab.attention.sentence_maps import SentenceMaps, to_json
from viz.chart_export import chart_html, chart_png, side_by_side


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
    for label, render, file_name, mime in (
        ("Charts (HTML)", chart_html, "attention.html", "text/html"),
        ("Charts (PNG)", chart_png, "attention.png", "image/png"),
    ):
        st.download_button(
            label,
            lambda render=render: render(combined),
            file_name=file_name,
            mime=mime,
            key=f"download_{file_name.rsplit('.', 1)[1]}",
            on_click="ignore",
        )
