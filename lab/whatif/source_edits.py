"""Change the Spanish: drop, mask or replace one source word, re-translate, and compare.

The edit is made on the model's own subword ids, so every other token stays exactly as it was. The change in the
cross-attention map is read with the ORIGINAL output forced on both sources: the rows are then the same tokens, the
columns the original source words (the edited word is one column: a dropped word receives 0).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

import numpy as np

from data.tokenizer import Tokenizer
from lab.attention.words import merge_columns, word_groups, word_labels
from lab.whatif.steering import Steered, output_log_probs, search
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


def edited_ids(
    tokenizer: Tokenizer, src_ids: list[int], words: SourceWords, word: int, edit: EditKind, new: str = ""
) -> list[int]:
    """``src_ids`` with word ``word`` dropped, masked by ``<unk>`` (``new`` empty) or a chosen word, or replaced."""
    group = words.groups[word]
    before, after = src_ids[: group[0]], src_ids[group[-1] + 1 :]
    if edit == "drop":
        return before + after
    if edit == "mask" and not new.strip():
        return [*before, tokenizer.src.unk_id(), *after]
    replacement = tokenizer.encode_src(new.strip())[:-1]  # the word's subwords, its EOS dropped
    return before + (replacement or [tokenizer.src.unk_id()]) + after


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
    """Apply ``edit``, translate with ``options``, and read the cross-attention change at ``layer``."""
    words = source_words(tokenizer, src_ids)
    word, kind, new = edit
    new_ids = edited_ids(tokenizer, src_ids, words, word, kind, new)
    tokens, truncated = search(Steered(model), new_ids, options)
    group = words.groups[word]
    new_groups = [list(g) for g in words.groups]  # the original words' indices in the edited source
    shift = len(new_ids) - len(src_ids)
    new_groups[word] = list(range(group[0], group[0] + len(group) + shift))  # empty when dropped
    for w in range(word + 1, len(new_groups)):
        new_groups[w] = [i + shift for i in new_groups[w]]
    before = merge_columns(_cross(model, src_ids, original, layer), words.groups)
    after = merge_columns(_cross(model, new_ids, original, layer), new_groups)
    return SourceEdit(
        new_ids,
        tokens,
        truncated,
        float(output_log_probs(model, src_ids, original).sum()),
        float(output_log_probs(model, new_ids, original).sum()),
        words.labels,
        before,
        after,
    )
