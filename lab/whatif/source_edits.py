"""Change the Spanish: drop, mask or replace one source word, re-translate, and compare.

The edit is made on the model's own subword ids: a word is read again only where the edit changes how the tokenizer
reads it (the new word, as typed; a word that becomes the first), so the edited source is what typing the edited
sentence gives. The change in cross-attention is read with the ORIGINAL output forced on both sources: the same rows,
the original source words as columns (the edited word is one column: a dropped word receives 0).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from data.tokenizer import Tokenizer
from lab.attention.words import is_punctuation, merge_columns, word_groups, word_labels
from lab.whatif.steering import MAX_SOURCE, Steered, output_log_probs, search
from model.attention_maps import inspect
from model.transformer import Transformer
from translate.translator import DecodeOptions

EditKind = Literal["drop", "mask", "replace"]
EDIT_KINDS: tuple[EditKind, ...] = ("drop", "mask", "replace")


@dataclass(frozen=True)
class SourceWords:
    """The source split into words (EOS a word of its own), with the subword indices of each."""

    labels: list[str]
    groups: list[list[int]]
    editable: list[int]  # indices of words that may be edited (not EOS)


def source_words(tokenizer: Tokenizer, src_ids: list[int]) -> SourceWords:
    pieces = tokenizer.src_pieces(src_ids)
    special = [i == tokenizer.src.eos_id() or i == tokenizer.src.pad_id() for i in src_ids]
    groups = word_groups(pieces, special)
    editable = [w for w, g in enumerate(groups) if not all(special[i] for i in g)]
    return SourceWords(word_labels(pieces, groups), groups, editable)


_AROUND = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)  # punctuation before, the word, punctuation after


def in_place_of(new: str, old: str) -> str:
    """The typed ``new`` word in ``old``'s place: ``old``'s punctuation kept ("casa." -> "cama."), unless typed too."""
    old_lead, old_core, old_trail = _AROUND.match(old).groups()  # type: ignore[union-attr]
    lead, core, trail = _AROUND.match(new).groups()  # type: ignore[union-attr]
    if not old_core or not core:  # a word of punctuation only, either side: nothing to keep around it
        return new
    return (lead or old_lead) + core + (trail or old_trail)


def edited_ids(
    tokenizer: Tokenizer, src_ids: list[int], words: SourceWords, word: int, edit: EditKind, new: str = ""
) -> tuple[list[int], list[list[int]]]:
    """``src_ids`` with word ``word`` dropped, masked by ``<unk>`` (``new`` empty) or replaced by ``new`` read as
    typed (its punctuation kept), and each original word's indices in them (a dropped word: none)."""
    if edit != "drop" and not new.strip():  # masked by <unk>, its punctuation kept: "católica." reads "<unk>."
        return _assemble(src_ids, words.groups, {word: masked(tokenizer, src_ids, words.groups[word])})
    typed = [words.labels[w] for w in words.editable]  # the words as typed: "El", "gato", "casa."
    at = words.editable.index(word)
    changed = list(typed)
    changed[at] = "" if edit == "drop" else in_place_of(new.strip(), typed[at])
    kept = [w for w in changed if w]
    # each word as the tokenizer reads it in its sentence: only the first word is read with a capital
    read_before = tokenizer.src_tokens(typed)
    read_after = iter(tokenizer.src_tokens(kept))
    replaced: dict[int, list[int]] = {}
    for k, w in enumerate(words.editable):
        if not changed[k]:
            replaced[w] = []
            continue
        reading = next(read_after)
        if reading != read_before[k]:
            replaced[w] = tokenizer.src.encode(reading) or [tokenizer.src.unk_id()]
    return _assemble(src_ids, words.groups, replaced)


def masked(tokenizer: Tokenizer, src_ids: list[int], group: list[int]) -> list[int]:
    """The word's ids with its letters one ``<unk>``: the punctuation pieces at either end kept (a word of
    punctuation only is masked whole)."""
    punct = [is_punctuation(tokenizer.src.id_to_piece(src_ids[i])) for i in group]
    if all(punct):
        return [tokenizer.src.unk_id()]
    lead = punct.index(False)
    trail = len(group) - punct[::-1].index(False)
    return [src_ids[i] for i in group[:lead]] + [tokenizer.src.unk_id()] + [src_ids[i] for i in group[trail:]]


def _assemble(
    src_ids: list[int], groups: list[list[int]], replaced: dict[int, list[int]]
) -> tuple[list[int], list[list[int]]]:
    """``src_ids`` with the ids of each word in ``replaced`` swapped for its new ids; each word's new indices."""
    ids: list[int] = []
    new_groups: list[list[int]] = []
    for w, group in enumerate(groups):
        word_ids = replaced.get(w, [src_ids[i] for i in group])
        new_groups.append(list(range(len(ids), len(ids) + len(word_ids))))
        ids += word_ids
    return ids, new_groups


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(word, status) pairs of the two English outputs merged: status "same", "removed" or "added"."""
    a, b = old.split(), new.split()
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [(w, "same") for w in a[i1:i2]]
            continue
        out += [(w, "removed") for w in a[i1:i2]]
        out += [(w, "added") for w in b[j1:j2]]
    return out


@dataclass(frozen=True)
class SourceEdit:
    """Both sources and translations, and the cross-attention change on the original output's rows."""

    src_ids: list[int]  # the edited source (EOS last)
    tokens: list[int]  # its translation, EOS last
    truncated: bool
    original_log_prob: float  # log p(original output | original source)
    forced_log_prob: float  # log p(original output | edited source)
    columns: list[str]  # the original source words (EOS last)
    before: np.ndarray  # (T, words) cross-attention, original output on the original source
    after: np.ndarray  # (T, words) the same output on the edited source; the edited word's column holds its new ids

    @property
    def change(self) -> np.ndarray:
        return self.after - self.before


def _cross(model: Transformer, src_ids: list[int], out: list[int], layer: int) -> np.ndarray:
    """(T, S) cross-attention at ``layer``, mean of heads, of ``out`` forced on ``src_ids``."""
    return inspect(model, src_ids, out).cross[layer].mean(0).numpy()


def edit_and_compare(
    model: Transformer,
    tokenizer: Tokenizer,
    src_ids: list[int],
    original: list[int],
    edit: tuple[int, EditKind, str],
    options: DecodeOptions,
    layer: int,
) -> SourceEdit:
    """Apply ``edit``, translate with ``options``, and read the cross-attention change at ``layer``; ValueError when
    the changed sentence is longer than ``MAX_SOURCE`` subwords."""
    words = source_words(tokenizer, src_ids)
    word, kind, new = edit
    new_ids, new_groups = edited_ids(tokenizer, src_ids, words, word, kind, new)  # new_groups: empty when dropped
    if len(new_ids) > MAX_SOURCE:  # refused before any pass: a long typed word would make every pass longer
        raise ValueError(f"the changed sentence has {len(new_ids)} subwords; the what-if tools take up to {MAX_SOURCE}")
    tokens, truncated = search(Steered(model), new_ids, options)
    before = merge_columns(_cross(model, src_ids, original, layer), words.groups)
    after = merge_columns(_cross(model, new_ids, original, layer), new_groups)
    original_log_prob, forced_log_prob = (float(output_log_probs(model, s, original).sum()) for s in (src_ids, new_ids))
    return SourceEdit(new_ids, tokens, truncated, original_log_prob, forced_log_prob, words.labels, before, after)
