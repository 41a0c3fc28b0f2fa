"""The map chart every view draws: one heatmap with the followed token lit, one colour scale, clicks that choose."""

from __future__ import annotations

import hashlib
import math

import altair as alt
import numpy as np
import pyarrow as pa
import streamlit as st

from lab.attention.map_views import MapView
from lab.attention.sentence_maps import Kind, SentenceMaps
from lab.attention.token_focus import Focus, token_at
from lab.page.direction import Languages
from lab.page.labels import axis_titles
from viz.focus import CELL_SELECTION, PANEL_SELECTION, clickable, focus_frame, picked, unit_scale, with_focus
from viz.heatmap import attention_frame, attention_heatmap


def heatmap(
    view: MapView,
    weights: np.ndarray,
    title: str,
    subtitle: str,
    langs: Languages,
    lit: Focus | None = None,
    shared: bool = True,
) -> alt.Chart:
    """One (rows, cols) map of ``view``, axes naming query and key, the followed token lit; on its own colour scale
    (not ``shared``), its subtitle prints the map's largest weight, the darkest colour's meaning."""
    frame = attention_frame(weights, view.row_labels, view.cols, view.future, view.inputs)
    if not shared:
        top = math.floor(float(np.max(weights, initial=0.0)) * 1000) / 1000  # never rounded up to a 1 it is not
        subtitle = f"{subtitle} · own scale, max {top:.3f}"
    if lit is not None and (lit.rows or lit.cols):
        frame = focus_frame(frame, lit.rows, lit.cols)
    chart = attention_heatmap(frame, title, *axis_titles(view.kind, langs), subtitle=subtitle)
    if "focus" in frame.columns:
        chart = with_focus(chart)
    return unit_scale(chart) if shared else chart


def clickable_cells(chart: alt.Chart) -> alt.Chart:
    """The map with a click selection on its cells (for ``on_select``; kept out of downloaded charts)."""
    return clickable(chart, CELL_SELECTION, ["row", "col"])


def arrow_spec(chart: alt.Chart | alt.LayerChart) -> dict:
    """``chart`` as the Vega-Lite spec ``st.altair_chart`` sends, for ``st.vega_lite_chart``: its one data frame as an
    Arrow dataset (Streamlit passes such bytes on untouched), no Altair theme (Streamlit's own look)."""
    table = pa.Table.from_pandas(chart.data, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    name = f"data-{hashlib.blake2b(data, digest_size=16).hexdigest()}"
    inline: dict[str, object] = {}  # data of a layer of its own would land here: the maps have none
    spec = chart.properties(data=alt.NamedData(name=name)).to_dict(context={"top_level": False, "datasets": inline})
    assert not inline, "a map's layers share its one data frame"
    spec["datasets"] = {name: data}
    return spec


def cell_clicked(maps: SentenceMaps, kind: Kind, words: bool) -> None:
    """A click on a map cell follows the token of its row."""
    point = picked(st.session_state.get(f"map_{kind}"), CELL_SELECTION)
    if point and "row" in point:
        st.session_state["follow"] = token_at(maps, kind, int(point["row"]), words)


def grid_aids(chart: alt.FacetChart, shared: bool) -> alt.FacetChart:
    """The all-heads grid: dimmed outside the followed token when its data has a ``focus`` column, clickable panels."""
    if "focus" in chart.data.columns:
        chart = with_focus(chart)
    return clickable(unit_scale(chart) if shared else chart, PANEL_SELECTION, ["layer", "head"])
