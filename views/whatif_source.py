"""Change the Spanish: drop, mask or replace one source word; both translations, a word diff, the attention change."""

from __future__ import annotations

import streamlit as st

from lab.page.direction import Languages
from lab.whatif.source_edits import EDIT_KINDS, SourceEdit, edit_and_compare, source_words, word_diff
from lab.whatif.steering import Subject
from translate.translator import DecodeOptions, Translator
from views.word_alternatives import literal
from viz.whatif_charts import change_chart, change_frame

# what ``lab.whatif.source_edits`` keeps (tests/test_source_edits.py checks it): a dropped first word's successor
# is read again, with the capital mark typing gives a first word
EDIT_NOTE = (
    "The edit is made on the model's own subwords, as typing the changed sentence gives them: every other word keeps "
    "its subwords, except a word that becomes the first, which is read with a capital as typing would."
)


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


def diff_markdown(old: str, new: str) -> str:
    """The merged word diff as markdown: removed words struck through in red, added ones bold in green."""
    styles = {"same": "{}", "removed": ":red[~~{}~~]", "added": ":green[**{}**]"}
    return " ".join(styles[status].format(literal(word)) for word, status in word_diff(old, new))


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
    st.markdown("**Word diff**: " + (diff_markdown(old, new) if old != new else "the translation did not change."))
    st.caption(
        f"The original {langs.tgt} output is log p = {result.original_log_prob:.3f} on the original sentence and "
        f"{result.forced_log_prob:.3f} on the changed one (teacher-forced)."
    )
    frame = change_frame(result.before, result.after, subject.maps.tgt_out, result.columns)
    chart = change_chart(
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
