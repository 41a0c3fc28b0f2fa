"""Attribution beside attention: which source and English subwords moved the chosen output token, and how much."""

from __future__ import annotations

import streamlit as st

from lab.attention.sentence_maps import pick
from lab.attention.step_choices import next_token_log_probs
from lab.page.direction import Languages
from lab.whatif.attribution import IG_STEPS, MAX_IG_STEPS, Attribution, attribute
from lab.whatif.steering import Subject
from translate.translator import Translator
from views.heavy_slot import Busy, in_line, slot
from viz.whatif_charts import heat_rows_chart, heat_rows_frame

CONTRASTS = 5  # alternatives offered for "rather than"


@st.cache_data(show_spinner="Taking gradients…", max_entries=32)
def attributed(
    directory: str,
    src_ids: tuple[int, ...],
    tokens: tuple[int, ...],
    step: int,
    contrast: int | None,
    steps: int,
    _translator: Translator,
) -> Attribution:
    with slot():
        return attribute(_translator.model, list(src_ids), list(tokens), step, contrast, steps)


def alternatives(subject: Subject, step: int) -> list[int]:
    """The most probable tokens at ``step`` other than the one chosen."""
    tgt_in = [subject.translator.model.config.bos_id, *subject.tokens[:step]]
    log_probs = next_token_log_probs(subject.translator.model, list(subject.src_ids), tgt_in)[step]  # (V,)
    best = log_probs.topk(CONTRASTS + 1).indices.tolist()
    return [i for i in best if i != subject.tokens[step]][:CONTRASTS]


def rows(name: str, attention: object, result: Attribution, source: bool) -> dict:
    """Attention row and both attribution rows, each named with its largest |value| (rows are scaled on their own)."""
    gxi = result.src_grad_x_input if source else result.tgt_grad_x_input
    ig = result.src_integrated if source else result.tgt_integrated
    return {
        f"{name} (max {max(attention):.2f})": attention,
        f"input × gradient (max |a| {abs(gxi).max():.2f})": gxi,
        f"integrated gradients (max |a| {abs(ig).max():.2f})": ig,
    }


def show_attribution(subject: Subject, langs: Languages) -> None:
    maps, tok = subject.maps, subject.translator.tokenizer
    a, b, c = st.columns([2, 2, 2])
    step = a.selectbox(
        "Output token",
        range(len(maps.tgt_out)),
        format_func=lambda i: f"{i + 1}: {maps.tgt_out[i]}",
        key="whatif_token",
    )
    options = [None, *alternatives(subject, step)]
    contrast = b.selectbox(
        "Rather than (contrastive)",
        options,
        format_func=lambda t: "—" if t is None else tok.tgt.id_to_piece(t),
        key=f"whatif_contrast_{step}",
    )
    steps = c.slider("Integrated-gradient steps", 8, MAX_IG_STEPS, IG_STEPS, 8, key="whatif_ig_steps")
    asked = (subject.directory, subject.src_ids, subject.tokens, step, contrast, steps)
    try:
        with in_line("attribution"):
            result = attributed(*asked, _translator=subject.translator)
    except (ValueError, Busy) as err:  # refused before it starts: too many points for this sentence and token
        st.warning(f"Not computed: {err}".rstrip(".") + ".")
        return
    what = f"log p({maps.tgt_out[step]})"
    if contrast is not None:
        what += f" − log p({tok.tgt.id_to_piece(contrast)})"
    share = result.source_share()
    st.markdown(
        f"**{what}** = {result.value:.3f} · from the {langs.src}: **{share:.0%}**, from the {langs.tgt} written so "
        f"far: **{1 - share:.0%}** (integrated gradients, share of |attribution|)"
    )
    layer, src_row = subject.layer, pick(maps.cross, subject.layer, None)[step]
    src_chart = heat_rows_chart(
        heat_rows_frame(rows(f"cross-attention L{layer + 1}", src_row, result, True), maps.src),
        f"{langs.src} source",
        f"{langs.src} subword",
    )
    st.altair_chart(src_chart, key="whatif_attr_source")
    tgt_row = pick(maps.decoder, layer, None)[step][: step + 1]
    tgt_chart = heat_rows_chart(
        heat_rows_frame(rows(f"self-attention L{layer + 1}", tgt_row, result, False), maps.tgt_in[: step + 1]),
        f"{langs.tgt} written so far (decoder input)",
        "decoder input subword",
    )
    st.altair_chart(tgt_chart, key="whatif_attr_target")
    gap = result.completeness_gap
    st.caption(
        f"Attribution of a subword: (its token vector − baseline) · gradient of f, summed over d_model; baseline: "
        f"every token vector zero (positions kept). Completeness check: Σ integrated gradients − (f(input) − "
        f"f(baseline) = {result.value - result.baseline_value:.3f}) = {gap:+.4f} with {result.steps} steps (more "
        "steps make it smaller). Blue pushed f up, red pushed it down; each row is scaled by its own largest value, "
        "named in the row; the attention rows are the mean of heads at the page's decoder layer. Attribution, like "
        "attention, is one reading of the model, not proof of why it chose the token."
    )
