"""The model's structure, drawn from its own configuration: the architecture panel (where each map comes from) and
the positional encoding tab (the signal added to each token's embedding, one curve per dimension)."""

from __future__ import annotations

import streamlit as st

from lab.attention.sentence_maps import KIND_TITLES, KINDS, Kind
from lab.attention.translate_with_maps import positional_table
from model.config import ModelConfig
from views.tab_context import TabContext
from viz import architecture_diagram as diagram

POSITIONS_SHOWN = 64  # at least this many positions (the model's limit permitting): enough to see the slow waves


def show_architecture(config: ModelConfig, kind: Kind, layer: int) -> None:
    """The diagram with the attention block of ``kind`` at ``layer`` (0-based, as the page's layer controls) lit."""
    frame = diagram.architecture_frame(config, kind, layer)
    layers = f"{config.n_encoder_layers} encoder + {config.n_decoder_layers} decoder layers"
    heads = f"{config.n_heads} heads of {config.d_head}"
    title = f"This model: {layers} · {heads} · d_model {config.d_model} · d_ff {config.d_ff}"
    lit = f"lit: {KIND_TITLES[kind]}, layer {layer + 1} — the map you are looking at"
    st.caption(
        "Read from the bottom: tokens become vectors (embedding + position), pass up the encoder's layers, and the "
        "encoder's output (the memory) feeds the cross-attention of every decoder layer. Each attention block makes "
        "one map per head; the decoder's top layer feeds the softmax that gives every next token a probability."
    )
    with st.container(key="architecture", horizontal_alignment="center"):
        st.altair_chart(diagram.architecture_chart(frame, title, lit), key="architecture_chart")


def show_architecture_tab(ctx: TabContext) -> None:
    """The diagram, lit at the block of the kind the learner picks, at the layer its map above shows."""
    kind = st.radio(
        "Light up the block of",
        KINDS,
        index=len(KINDS) - 1,
        format_func=lambda k: KIND_TITLES[k],
        key="architecture_kind",
        horizontal=True,
    )
    show_architecture(ctx.translator.model.config, kind, ctx.display.layers[kind])


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
        "Dimensions", list(range(d_model)), default=diagram.default_dimensions(d_model), key="pe_dims", max_selections=8
    )
    st.caption(
        "Each dimension is a wave along the positions: low dimensions change fast, high ones slowly. The shaded "
        "band is this sentence."
    )
    chart = diagram.positional_curves(
        diagram.curves_frame(table, dims), "Positional encoding, one curve per dimension", min(n, len(table))
    )
    st.altair_chart(chart, key="positional_curves", width="stretch")
