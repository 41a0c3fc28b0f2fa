"""The What if tab: change something in the model's input or inside the model, and watch the translation change:
change the source (views/whatif_source.py), switch heads off (re-decode, and every head's effect on the original
output), or attribution beside attention (which source and target subwords moved the chosen output token, how much).

One tool runs at a time (the page's work stays bounded); each is computed by the model itself (``lab/whatif``).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from lab.attention.sentence_maps import pick
from lab.attention.step_choices import next_token_log_probs
from lab.page.direction import Languages
from lab.whatif.attribution import IG_STEPS, MAX_IG_STEPS, Attribution, attribute
from lab.whatif.head_ablation import MAX_SCANNED, Ablation, Head, ablate, all_heads, head_effects
from lab.whatif.steering import MAX_SOURCE, Subject
from translate.translator import DecodeOptions, Translator
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext
from views.whatif_source import show_source_edit
from viz.whatif_charts import head_effect_chart, head_effect_frame, heat_rows_chart, heat_rows_frame

CONTRASTS = 5  # alternatives offered for "rather than"


def tools(langs: Languages) -> tuple[str, ...]:
    """The tools' names in the model's languages. (A word of the translation is changed by clicking it, beside the
    translation: views/word_alternatives.py.)"""
    return f"Change the {langs.src}", "Switch heads off", "Attribution"


def show_whatif(ctx: TabContext) -> None:
    """The tool picker and the tool chosen, for the page's sentence and hypothesis, decoded as the page decodes."""
    options = DecodeOptions(beam_size=ctx.request.beam_size, length_penalty=ctx.request.length_penalty)
    src_ids, tokens, langs = tuple(ctx.sentence.src_ids), tuple(ctx.candidate.tokens), ctx.langs
    subject = Subject(ctx.translator, ctx.request.model, src_ids, tokens, ctx.maps, options, ctx.cross_layer)
    st.caption(
        "Ask the model “what if?”: change its input or its inside and see what it does. Every number here is "
        "computed by the model itself; none of it proves why the model translates as it does."
    )
    if len(subject.src_ids) > MAX_SOURCE:
        st.info(f"This sentence has {len(subject.src_ids)} subwords; the what-if tools take up to {MAX_SOURCE}.")
        return
    names = tools(langs)
    tool = st.radio("Tool", names, key="whatif_tool", horizontal=True)
    (show_source_edit, show_heads, show_attribution)[names.index(tool)](subject, langs)


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
