"""The positional encoding tab: the signal added to each token's embedding, one curve per dimension."""

from __future__ import annotations

import streamlit as st

from lab.attention.translate_with_maps import positional_table
from views.tab_context import TabContext
from viz.positional_curves import curves_frame, default_dimensions, positional_curves

POSITIONS_SHOWN = 64  # at least this many positions (the model's limit permitting): enough to see the slow waves


def show_positional(ctx: TabContext) -> None:
    n = len(ctx.maps.src)
    st.caption(
        "The position signal added to each token's embedding before the first layer: slow "
        "and fast waves let the model tell positions apart and compare distances. Positions count from 0 as in the "
        "formula sin(pos / 10000^(2i/d_model)): position 0 is the token the maps number 1."
    )
    table = positional_table(ctx.translator, max(n, POSITIONS_SHOWN))
    d_model = table.shape[1]
    dims = st.multiselect(
        "Dimensions", list(range(d_model)), default=default_dimensions(d_model), key="pe_dims", max_selections=8
    )
    st.caption(
        "Each dimension is a wave along the positions: low dimensions change fast, high ones slowly. The shaded "
        "band is this sentence."
    )
    chart = positional_curves(
        curves_frame(table, dims), "Positional encoding, one curve per dimension", min(n, len(table))
    )
    st.altair_chart(chart, key="positional_curves", width="stretch")
