"""Head summary: entropy and pattern label of every (layer, head), clickable to show that head."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from viz.heatmap import FIT_X

HEAD_SELECTION = "head_pick"  # name of the click selection (read back by the app)


def heads_frame(summaries: Sequence[tuple[int, int, float, str, float]]) -> pd.DataFrame:
    """(layer, head, entropy, label, share) 0-based -> tidy frame with 1-based layer and head for display."""
    frame = pd.DataFrame(summaries, columns=["layer", "head", "entropy", "label", "share"])
    frame["layer"] += 1
    frame["head"] += 1
    return frame


def heads_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    """Layers × heads grid: colour = entropy in bits (lighter = more focused, darker = more spread out), text =
    pattern label; a click picks a head."""
    pick = alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick")
    base = alt.Chart(frame).encode(
        x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("layer:O", title="layer"),
    )
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color("entropy:Q", title="entropy (bits)", scale=alt.Scale(scheme="viridis", reverse=True)),
        tooltip=[
            alt.Tooltip("layer:O"),
            alt.Tooltip("head:O"),
            alt.Tooltip("entropy:Q", format=".2f", title="entropy (bits)"),
            alt.Tooltip("label:N", title="pattern"),
            alt.Tooltip("share:Q", format=".0%", title="rows following it"),
        ],
    )
    cells = cells.add_params(pick).encode(opacity=alt.when(pick).then(alt.value(1.0)).otherwise(alt.value(0.5)))
    middle = float(frame["entropy"].min() + frame["entropy"].max()) / 2 if len(frame) else 0.0
    ink = (
        alt.when(alt.datum.entropy > middle).then(alt.value("white")).otherwise(alt.value("black"))
    )  # readable on dark
    labels = base.mark_text(fontSize=12).encode(text="label:N", color=ink)
    n_layers = frame["layer"].nunique()
    return alt.layer(cells, labels, title=title).properties(height=max(80, 45 * n_layers), autosize=FIT_X)
