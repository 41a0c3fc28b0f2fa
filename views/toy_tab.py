"""The Watch it learn tab: a tiny Transformer trained live on a toy task, its cross-attention redrawn as it forms
(``lab/toy_task``); the learner changes one thing and trains again."""

from __future__ import annotations

import time

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from lab.toy_task import HELD_OUT, TASKS, Progress, ToyConfig, train
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext
from viz.training_charts import probe_chart, toy_chart

RESULT = "toy_result"  # (config, records, last report) of this session's last run, small: kept to show after it
REDRAW_SECONDS = 0.3  # charts redrawn at most this often: a report comes every few milliseconds
POSITIONS = {
    "sinusoidal": "sinusoidal (the paper's)",
    "learned": "learned table",
    "none": "none (no word order)",
}


def choices() -> ToyConfig:
    """The task and the one thing the learner may change (everything else stays as ``ToyConfig``'s defaults)."""
    task, layers, heads, positions = st.columns(4)
    return ToyConfig(
        task=task.selectbox("Task", list(TASKS), key="toy_task"),
        n_layers=layers.selectbox("Layers (encoder and decoder each)", [1, 2], key="toy_layers"),
        n_heads=heads.selectbox("Heads", [1, 2, 4], index=1, key="toy_heads"),
        positions=positions.selectbox(
            "Positional encoding", list(POSITIONS), format_func=POSITIONS.get, key="toy_positions"
        ),
    )


def draw(records: list[dict], last: Progress, curves: DeltaGenerator, picture: DeltaGenerator) -> None:
    """The curves and the fixed example's cross-attention (last layer, mean of heads: a display choice)."""
    curves.altair_chart(toy_chart(records))
    title = f"Cross-attention at step {last.step}: last layer, mean of heads"
    picture.altair_chart(probe_chart(last.cross.mean(axis=0), last.out, last.src, title))


def run(config: ToyConfig, curves: DeltaGenerator, picture: DeltaGenerator) -> None:
    """Train while this session watches: charts redrawn as it goes, the result kept; waits in the server's line."""
    try:  # a rerun or a closed tab raises inside st calls: the slot is released and training stops with it
        with in_line("toy model"), slot():
            bar = st.progress(0.0)
            records: list[dict] = []
            drawn = 0.0
            for report in train(config):
                records.append({"kind": "toy", "step": report.step, "loss": report.loss, "accuracy": report.accuracy})
                if report.done or time.perf_counter() - drawn >= REDRAW_SECONDS:
                    draw(records, report, curves, picture)
                    share = max(report.step / config.max_steps, report.seconds / config.max_seconds)
                    bar.progress(min(1.0, share), text=f"step {report.step}, {report.seconds:.1f} s")
                    drawn = time.perf_counter()
            bar.empty()
    except Busy as err:
        st.warning(str(err))
        return
    st.session_state[RESULT] = (config, records, report)


def show_toy(ctx: TabContext) -> None:
    st.caption(
        "A Transformer of this lab's own code, tiny (d_model 32), learns a toy task in front of you: reverse, copy "
        "or sort 8 symbols out of 12. Watch its cross-attention form on one held-out example — reverse makes the "
        "anti-diagonal, copy the diagonal — then change one thing and see what breaks (without positions, reverse "
        "and copy cannot be learned; sort can). A toy: real translation takes hours, and its maps are messier "
        "(docs/views.md)."
    )
    config = choices()
    start = st.button("Train", key="toy_train", type="primary")
    curves, picture = (column.empty() for column in st.columns(2))
    if start:
        run(config, curves, picture)
    kept = st.session_state.get(RESULT)
    if kept is not None and kept[0] == config:
        _, records, last = kept
        draw(records, last, curves, picture)
        why = "every held-out sequence right" if last.accuracy == 1.0 else "the step or time bound"
        st.caption(
            f"Stopped at step {last.step} after {last.seconds:.1f} s ({why}): {last.accuracy:.0%} of {HELD_OUT} "
            "held-out sequences (never trained on) answered exactly."
        )
