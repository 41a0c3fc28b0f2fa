"""Reading aids for the heatmaps: follow a token (dim the rest), click to choose, one shared 0–1 colour scale."""

from __future__ import annotations

from collections.abc import Collection

import altair as alt
import pandas as pd

CELL_SELECTION = "cell_pick"  # click on a map cell: its row's token becomes the followed token
PANEL_SELECTION = "panel_pick"  # click on a panel of the layers × heads grid: that layer and head become the view
DIMMED = 0.2  # opacity of cells outside the followed token's rows and columns


def focus_frame(frame: pd.DataFrame, rows: Collection[int], cols: Collection[int]) -> pd.DataFrame:
    """A copy of an ``attention_frame`` with a ``focus`` column: True in the given rows and columns."""
    out = frame.copy()
    out["focus"] = frame["row"].isin(list(rows)) | frame["col"].isin(list(cols))
    return out


def with_focus(chart: alt.Chart | alt.FacetChart) -> alt.Chart | alt.FacetChart:
    """Full opacity where ``focus`` is True, dimmed elsewhere (the chart's data needs a ``focus`` column)."""
    opacity = alt.when(alt.datum.focus).then(alt.value(1.0)).otherwise(alt.value(DIMMED))
    if isinstance(chart, alt.FacetChart):
        out = chart.copy()
        out.spec = chart.spec.encode(opacity=opacity)
        return out
    return chart.encode(opacity=opacity)


def unit_scale(chart: alt.Chart | alt.FacetChart) -> alt.Chart | alt.FacetChart:
    """The weight colour on a fixed 0–1 scale, so that the same colour means the same weight in every view."""
    inner = chart.spec if isinstance(chart, alt.FacetChart) else chart
    colour = inner.encoding.color
    colour = colour.scale(scheme=colour["scale"]["scheme"], domain=[0, 1])  # a copy; condition and legend kept
    if isinstance(chart, alt.FacetChart):
        out = chart.copy()
        out.spec = inner.encode(color=colour)
        return out
    return chart.encode(color=colour)


def clickable(chart: alt.Chart | alt.FacetChart, name: str, fields: list[str]) -> alt.Chart | alt.FacetChart:
    """Add a click selection ``name`` on ``fields`` (read back by Streamlit's ``on_select``)."""
    return chart.add_params(alt.selection_point(name=name, fields=fields, on="click", clear="dblclick"))


def picked(event: object, name: str) -> dict | None:
    """The first point of selection ``name`` in a Streamlit chart event (or its session-state value), else None."""
    selection = getattr(event, "selection", None)
    if selection is None and isinstance(event, dict):
        selection = event.get("selection")
    if selection is None:
        return None
    points = selection.get(name) if isinstance(selection, dict) else getattr(selection, name, None)
    return dict(points[0]) if points else None
