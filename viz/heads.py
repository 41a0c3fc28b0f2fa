"""Head summary: entropy and pattern label of every (layer, head), clickable to show that head."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

HEAD_SELECTION = "head_pick"  # name of the click selection (read back by the app)


def heads_frame(summaries: Sequence[tuple[int, int, float, str, float]]) -> pd.DataFrame:
    """(layer, head, entropy, label, share) 0-based -> tidy frame with 1-based layer and head for display."""
    frame = pd.DataFrame(summaries, columns=["layer", "head", "entropy", "label", "share"])
    frame["layer"] += 1
    frame["head"] += 1
    return frame


def heads_chart(frame: pd.DataFrame, title: str, selectable: bool = True) -> alt.LayerChart:
    """Layers × heads grid: colour = entropy in bits (darker = more focused), text = pattern label."""
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
    if selectable:
        cells = cells.add_params(pick).encode(opacity=alt.when(pick).then(alt.value(1.0)).otherwise(alt.value(0.5)))
    labels = base.mark_text(fontSize=11, color="black").encode(text="label:N")
    n_layers, n_heads = frame["layer"].nunique(), frame["head"].nunique()
    return alt.layer(cells, labels, title=title).properties(
        width=max(200, 110 * n_heads), height=max(80, 45 * n_layers)
    )
