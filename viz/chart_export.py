"""Charts as files for download: standalone HTML, or PNG through vl-convert."""

from __future__ import annotations

import io

import altair as alt


def side_by_side(*charts: alt.TopLevelMixin) -> alt.HConcatChart:
    """The charts in one row, each keeping its own colour scale (their page-fitting autosize dropped)."""
    parts = []
    for chart in charts:
        part = chart.copy()
        part.autosize = alt.Undefined  # only the top level may size itself
        parts.append(part)
    return alt.hconcat(*parts).resolve_scale(color="independent")


def chart_html(chart: alt.TopLevelMixin) -> str:
    """A self-contained HTML page (vega-embed inlined by vl-convert: opens offline) that draws the chart."""
    return chart.to_html(inline=True)


def chart_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes rendered offline by vl-convert."""
    buffer = io.BytesIO()
    chart.save(buffer, format="png", scale_factor=scale)
    return buffer.getvalue()
