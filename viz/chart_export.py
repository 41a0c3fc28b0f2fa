"""Charts as files for download: standalone HTML, or PNG through vl-convert."""

from __future__ import annotations

import io
import re
import unicodedata

import altair as alt

STEM_CHARACTERS = 40  # of the sentence, in a downloaded file's name
TITLE_CHARACTERS = 100  # of each side, in a downloaded chart's title


def file_stem(sentence: str, prefix: str) -> str:
    """A file name (no extension) that names the sentence: "attention_el-gato-rojo-3"; ASCII letters and digits
    only, accents dropped, at most STEM_CHARACTERS of the sentence."""
    plain = unicodedata.normalize("NFKD", sentence).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", plain)
    stem = "-".join(words)[:STEM_CHARACTERS].strip("-")
    return f"{prefix}_{stem}" if stem else prefix


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARACTERS else text[: TITLE_CHARACTERS - 1] + "…"


def side_by_side(*charts: alt.TopLevelMixin, source: str = "", translation: str = "") -> alt.HConcatChart:
    """The charts in one row, each keeping its own colour scale (their page-fitting autosize dropped), titled with
    the sentence they show (``source`` → ``translation``) when given."""
    parts = []
    for chart in charts:
        part = chart.copy()
        part.autosize = alt.Undefined  # only the top level may size itself
        parts.append(part)
    title = f"{_cut(source)}  →  {_cut(translation)}" if source else alt.Undefined
    return alt.hconcat(*parts, title=title).resolve_scale(color="independent")


def chart_html(chart: alt.TopLevelMixin) -> str:
    """A self-contained HTML page (vega-embed inlined by vl-convert: opens offline) that draws the chart."""
    return chart.to_html(inline=True)


def chart_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes rendered offline by vl-convert."""
    buffer = io.BytesIO()
    chart.save(buffer, format="png", scale_factor=scale)
    return buffer.getvalue()
