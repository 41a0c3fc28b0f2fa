"""The What if tab: change something in the model's input or inside the model, and watch the translation change:
change the source (drop, mask or replace one word; both translations, a word diff, the attention change), switch heads
off (re-decode, and every head's effect on the original output), or attribution beside attention (which source and
target subwords moved the chosen output token, and how much).

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
from lab.whatif.source_edits import EDIT_KINDS, SourceEdit, edit_and_compare, source_words, word_diff
from lab.whatif.steering import MAX_SOURCE, Subject
from translate.translator import DecodeOptions, Translator
from views.heavy_slot import Busy, in_line, slot
from views.tab_context import TabContext
from views.word_alternatives import literal
from viz import whatif_charts as charts

CONTRASTS = 5  # alternatives offered for "rather than"
# what ``lab.whatif.source_edits`` keeps (tests/test_source_edits.py checks it): a dropped first word's successor
# is read again, with the capital mark typing gives a first word
EDIT_NOTE = (
    "The edit is made on the model's own subwords, as typing the changed sentence gives them: every other word keeps "
    "its subwords, except a word that becomes the first, which is read with a capital as typing would."
)


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


@st.cache_data(show_spinner="Translating the changed sentence…", max_entries=32)
def edited(
    directory: str,
    src_ids: tuple[int, ...],
    original: tuple[int, ...],
    edit: tuple[int, str, str],
    options: DecodeOptions,
    layer: int,
    _translator: Translator,
) -> SourceEdit:
    t = _translator
    return edit_and_compare(t.model, t.tokenizer, list(src_ids), list(original), edit, options, layer)  # type: ignore[arg-type]


def edit_controls(subject: Subject, labels: list[str], editable: list[int]) -> tuple[int, str, str] | None:
    """(word, edit, new word) from the widgets, or None when a replacement word is still missing."""
    a, b, c = st.columns([2, 2, 3])
    word = a.selectbox("Word", editable, format_func=lambda w: f"{w + 1}: {labels[w]}", key="whatif_word")
    kind = b.radio("Edit", EDIT_KINDS, key="whatif_edit", horizontal=True)
    new = ""
    if kind != "drop":
        hint = "empty: <unk>, the unknown-word token" if kind == "mask" else "the word to put in its place"
        new = c.text_input("Mask with" if kind == "mask" else "Replace with", key="whatif_new_word", placeholder=hint)
    if kind == "replace" and not new.strip():
        st.info("Type the word to put in its place.")
        return None
    return int(word), str(kind), new


def show_source_edit(subject: Subject, langs: Languages) -> None:
    tok = subject.translator.tokenizer
    words = source_words(tok, list(subject.src_ids))
    st.caption(
        f"Drop one {langs.src} word, mask it (with the unknown-word token or a neutral word of your choice), or "
        f"replace it; the model translates the changed sentence with the page's {subject.search_name}. {EDIT_NOTE}"
    )
    edit = edit_controls(subject, words.labels, words.editable)
    if edit is None:
        return
    asked = (subject.directory, subject.src_ids, subject.tokens, edit, subject.options, subject.layer)
    try:
        result = edited(*asked, _translator=subject.translator)
    except ValueError as err:  # the changed sentence is too long for the tools
        st.warning(f"Not translated: {err}.")
        return
    old, new = tok.decode_tgt(list(subject.tokens)), tok.decode_tgt(result.tokens)
    changed = [w for w in source_words(tok, result.src_ids).labels if w != tok.src.id_to_piece(tok.src.eos_id())]
    left, right = st.columns(2)
    left.markdown(f"**{langs.src}, as the model read it**")
    left.code(" ".join(words.labels[w] for w in words.editable), language=None, wrap_lines=True)
    left.code(old, language=None, wrap_lines=True)
    right.markdown(f"**{langs.src}, changed**")
    right.code(" ".join(changed), language=None, wrap_lines=True)
    with right.container(key="whatif_edited_output"):
        st.code(new, language=None, wrap_lines=True)
    right.caption("(truncated at the output length limit)" if result.truncated else "")
    styles = {"same": "{}", "removed": ":red[~~{}~~]", "added": ":green[**{}**]"}  # removed struck through, added bold
    diff = " ".join(styles[status].format(literal(word)) for word, status in word_diff(old, new))
    st.markdown("**Word diff**: " + (diff if old != new else "the translation did not change."))
    st.caption(
        f"The original {langs.tgt} output is log p = {result.original_log_prob:.3f} on the original sentence and "
        f"{result.forced_log_prob:.3f} on the changed one (teacher-forced)."
    )
    frame = charts.change_frame(result.before, result.after, subject.maps.tgt_out, result.columns)
    chart = charts.change_chart(
        frame,
        f"Change in cross-attention (layer {subject.layer + 1}, mean of heads)",
        f"original {langs.tgt} output (predicted token)",
        f"{langs.src} word (original)",
    )
    st.altair_chart(chart, key="whatif_change")
    st.caption(
        "Both maps are read with the ORIGINAL output forced on each sentence, so the rows are the same tokens; the "
        "edited word is one column (a dropped word receives 0). Blue: more attention after the edit, red: less."
    )


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
    frame = charts.head_effect_frame(
        [h.kind for h in found], [h.layer for h in found], [h.head for h in found], effects
    )
    st.altair_chart(
        charts.head_effect_chart(frame, "Which heads matter for this sentence: Δ log p(original output), one head off"),
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
    tgt_in = [subject.translator.model.config.bos_id, *subject.tokens[:step]]
    log_probs = next_token_log_probs(subject.translator.model, list(subject.src_ids), tgt_in)[step]  # (V,)
    best = log_probs.topk(CONTRASTS + 1).indices.tolist()  # the most probable tokens other than the one chosen
    options = [None, *[i for i in best if i != subject.tokens[step]][:CONTRASTS]]
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
    src_chart = charts.heat_rows_chart(
        charts.heat_rows_frame(rows(f"cross-attention L{layer + 1}", src_row, result, True), maps.src),
        f"{langs.src} source",
        f"{langs.src} subword",
    )
    st.altair_chart(src_chart, key="whatif_attr_source")
    tgt_row = pick(maps.decoder, layer, None)[step][: step + 1]
    tgt_chart = charts.heat_rows_chart(
        charts.heat_rows_frame(rows(f"self-attention L{layer + 1}", tgt_row, result, False), maps.tgt_in[: step + 1]),
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
