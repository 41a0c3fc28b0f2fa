"""Switch heads off: choose heads to zero, re-decode, and see every head's effect on the original output."""

from __future__ import annotations

import numpy as np
import streamlit as st

from lab.page.direction import Languages
from lab.whatif.head_ablation import MAX_SCANNED, Ablation, Head, ablate, all_heads, head_effects
from lab.whatif.steering import Subject
from translate.translator import DecodeOptions, Translator
from views.heavy_slot import Busy, in_line, slot
from viz.whatif_charts import head_effect_chart, head_effect_frame


@st.cache_data(show_spinner="Decoding with the heads off…", max_entries=32)
def ablated(
    directory: str,
    src_ids: tuple[int, ...],
    original: tuple[int, ...],
    heads: tuple[Head, ...],
    options: DecodeOptions,
    _translator: Translator,
) -> Ablation:
    with slot():
        return ablate(_translator.model, list(src_ids), list(original), list(heads), options)


@st.cache_data(show_spinner="Switching every head off in turn…", max_entries=32)
def scanned(
    directory: str, src_ids: tuple[int, ...], original: tuple[int, ...], _translator: Translator
) -> tuple[list[Head], np.ndarray]:
    with slot():
        return head_effects(_translator.model, list(src_ids), list(original))


def show_heads(subject: Subject, langs: Languages) -> None:
    tok = subject.translator.tokenizer
    heads = all_heads(subject.translator.model)
    st.caption(
        "A head switched off contributes nothing: its output is multiplied by 0 before the output projection W_O "
        f"(the same as zeroing its slice of W_O, tested). The model then decodes again with the page's "
        f"{subject.search_name}."
    )
    chosen = st.multiselect("Heads to switch off", heads, format_func=lambda h: h.label, key="whatif_heads")
    asked = (subject.directory, subject.src_ids, subject.tokens)
    try:
        with in_line("head scan"):
            result = chosen and ablated(*asked, tuple(sorted(chosen)), subject.options, _translator=subject.translator)
            found, effects = scanned(*asked, _translator=subject.translator)
    except Busy as err:
        st.warning(str(err))
        return
    if result:
        left, right = st.columns(2)
        left.markdown("**All heads on**")
        left.code(tok.decode_tgt(list(subject.tokens)), language=None, wrap_lines=True)
        right.markdown(f"**{len(chosen)} head{'s' if len(chosen) > 1 else ''} off**")
        with right.container(key="whatif_ablated_output"):
            st.code(tok.decode_tgt(result.tokens), language=None, wrap_lines=True)
        change = result.ablated_log_prob - result.original_log_prob
        st.caption(
            f"log p(original output) = {result.original_log_prob:.3f} with every head, {result.ablated_log_prob:.3f} "
            f"with these off (Δ {change:+.3f}, teacher-forced); the new output has log p = {result.new_log_prob:.3f} "
            "under the ablated model."
        )
    frame = head_effect_frame([h.kind for h in found], [h.layer for h in found], [h.head for h in found], effects)
    st.altair_chart(
        head_effect_chart(frame, "Which heads matter for this sentence: Δ log p(original output), one head off"),
        key="whatif_head_effects",
    )
    worst = int(np.argmin(effects))
    st.caption(
        f"One teacher-forced pass per head ({len(found)} heads"
        f"{'' if len(found) == len(heads) else f', the first {MAX_SCANNED}'}). Red: the original output became less "
        f"likely without the head; the largest drop is {found[worst].label} ({effects[worst]:+.3f}). Heads work "
        "together: switching two off can do more (or less) than the sum of their single effects."
    )
