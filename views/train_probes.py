"""The Train page's "attention being learned": a probe sentence's attention at each recorded dev evaluation, with a
step slider (built only when the user opens it)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from jobs.run_progress import probe_labels, probe_map, probe_steps
from viz.training_charts import probe_chart

KIND_TEXT = {
    "cross": "cross-attention (output → source)",
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
}
AXES = {"cross": ("tgt_out", "src"), "encoder": ("src", "src"), "decoder": ("tgt_out", "tgt_in")}


def show_probes(run_dir: Path) -> None:
    """Pick a probe sentence, a kind, a layer and a step; the map is averaged over heads (a display choice)."""
    steps, labels = probe_steps(run_dir), probe_labels(run_dir)
    if not steps or not labels:
        return
    if not st.toggle("Watch attention being learned (probe sentences)", key="probes_on"):
        return
    left, middle, right = st.columns(3)
    sentence = left.selectbox(
        "Probe sentence",
        range(len(labels)),
        key="probe_sentence",
        format_func=lambda i: " ".join(labels[i]["src"])[:60],
    )
    kind = middle.radio("Attention", list(KIND_TEXT), key="probe_kind", format_func=KIND_TEXT.get, horizontal=True)
    step = steps[0] if len(steps) == 1 else st.select_slider("Step", steps, value=steps[-1], key="probe_step")
    weights = probe_map(run_dir, step, sentence, kind)
    if weights is None:
        st.caption(f"The probes of step {step} cannot be read.")
        return
    layer = right.selectbox(
        "Layer",
        range(weights.shape[0]),
        index=weights.shape[0] - 1,
        key="probe_layer",
        format_func=lambda i: f"layer {i + 1}",
    )
    rows, cols = (labels[sentence][axis] for axis in AXES[kind])
    title = f"{KIND_TEXT[kind]}, layer {layer + 1}, mean of {weights.shape[1]} heads, step {step:,}"
    st.altair_chart(probe_chart(weights[layer].mean(axis=0), rows, cols, title), key="probe_chart")
    st.caption(
        f"Recorded at {len(steps)} dev evaluations: an untrained model spreads its attention evenly; a trained "
        "one looks at the source words it is translating."
    )
