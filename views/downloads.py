"""The download tab: the maps of the shown hypothesis as JSON, and the charts drawn as HTML and PNG."""

from __future__ import annotations

import altair as alt
import streamlit as st

from lab.attention.sentence_maps import SentenceMaps, to_json
from translate.translator import Candidate, Translation
from viz.chart_export import chart_html, chart_png, file_stem, side_by_side


def show_downloads(sentence: Translation, candidate: Candidate, maps: SentenceMaps, charts: list[alt.Chart]) -> None:
    st.caption("The maps of the shown hypothesis (every layer and head, with token labels) and the charts above.")
    st.download_button(
        "Attention maps (JSON)",
        lambda: to_json(maps, sentence.source, candidate.text),
        file_name=f"{file_stem(sentence.source, 'attention_maps')}.json",
        mime="application/json",
        key="download_json",
        on_click="ignore",
    )
    if not charts:
        return
    combined = side_by_side(*charts, source=sentence.source, translation=candidate.text)
    stem = file_stem(sentence.source, "attention")
    for label, render, extension, mime in (
        ("Charts (HTML)", chart_html, "html", "text/html"),
        ("Charts (PNG)", chart_png, "png", "image/png"),
    ):
        st.download_button(
            label,
            lambda render=render: render(combined),
            file_name=f"{stem}.{extension}",
            mime=mime,
            key=f"download_{extension}",
            on_click="ignore",
        )
