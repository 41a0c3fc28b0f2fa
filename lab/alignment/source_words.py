"""Which source words each output word attended to, for the page's hover: one stated reading of the cross-attention
(by default the one nearest people's word links on the model's alignment bench, lab/alignment/bench_result.py),
read off the translation's own record and drawn on the source as the user typed it.

Both sides are cut into words as the bench cuts its gold ones (a punctuation mark a word of its own) and the links
come from the bench's own code (``forced_pair``, ``Method.links``), so the AER shown is the AER of what is lit. A
source word the name guard swapped is shown as typed, never as the stand-in the model read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from data.case_markup import MARK
from data.tokenizer import WORD_START, Tokenizer
from lab.alignment.bench_result import StoredAlignment, default_reading
from lab.alignment.methods import Method, forced_pair
from lab.attention.words import word_groups
from lab.page.output_words import OutputWord
from translate.name_guard import whole_tokens
from translate.translator import Translation


@dataclass(frozen=True)
class SourceWord:
    text: str  # as typed (a swapped name: its original)
    before: str  # what stands between it and the word before it, as typed ("" inside a token: "hermana" ".")
    stand_in: str = ""  # what the model read instead, when the name guard swapped it


@dataclass(frozen=True)
class WordSources:
    source: list[SourceWord]  # the source as typed, word by word
    links: list[frozenset[int]]  # for each output word (as ``output_words`` lists them), its source words lit


def hover_reading(stored: StoredAlignment | None, n_layers: int, n_heads: int) -> tuple[Method, float | None]:
    """The reading lit on hover and its AER on the bench's test set: the stored nearest one, else the maps' own
    default (AER None: not measured)."""
    best = stored.nearest if stored else None
    if stored is None or best is None or best.layer >= n_layers or (best.head or 0) >= n_heads:
        return default_reading(n_layers), None
    return best, stored.nearest_aer


def typed_words(
    tokenizer: Tokenizer, sentence: Translation, groups: list[list[int]], pieces: list[str]
) -> list[tuple[SourceWord, list[int]]] | None:
    """The source as typed, cut into words to show, each with the model's source words (``groups`` of ``pieces``)
    under it; None when they cannot be laid on the typed text (a character the model read as a space, say)."""
    guarded = sentence.guarded
    read = guarded.read_as if guarded else sentence.source  # what the model read, stand-ins in place
    found = list(re.finditer(r"\S+", read))
    tokens = [t for t, r in zip(found, tokenizer.src_tokens([t.group() for t in found]), strict=True) if r.strip(MARK)]
    clusters: list[list[int]] = []  # the model's words of each typed token: a new token at every "▁"
    for w, group in enumerate(groups):
        if not clusters or pieces[group[0]].startswith(WORD_START):
            clusters.append([])
        clusters[-1].append(w)
    if len(clusters) > len(tokens) or (len(clusters) < len(tokens) and not sentence.truncated):
        return None
    spans: list[tuple[int, int, list[int]]] = []  # (start, end) in ``read`` and the model's words there
    for token, words in zip(tokens, clusters + [[]] * (len(tokens) - len(clusters)), strict=True):
        lengths = [len("".join(pieces[i] for i in groups[w]).strip(WORD_START).replace(MARK, "")) for w in words]
        if len(words) > 1 and sum(lengths) == len(token.group()) and all(lengths):  # cut where the model cut it
            ends = list(accumulate(lengths, initial=token.start()))
            spans += [(a, b, [w]) for a, b, w in zip(ends, ends[1:], words, strict=False)]
        else:
            spans.append((token.start(), token.end(), words))
    names, at = [], 0  # each swapped name: its place in ``read``, its original, its stand-in
    for swap in guarded.swaps if guarded else ():
        if m := whole_tokens(frozenset([swap.stand_in])).search(read, at):
            names.append((m.start(), m.end(), swap.original, swap.stand_in))
            at = m.end()
    out: list[tuple[SourceWord, list[int]]] = []
    end = 0
    for start, stop, _ in spans:
        if start < end:
            continue  # part of a name already shown
        a, b, original, stand_in = next((n for n in names if n[0] < stop and start < n[1]), (stop, stop, "", ""))
        merged = [span for span in spans if span[0] < max(b, stop) and start < span[1]]  # a name: all it touches
        stop = merged[-1][1]
        word = SourceWord(read[start:a] + original + read[b:stop], read[end:start], stand_in)
        out.append((word, [w for *_, ws in merged for w in ws]))
        end = stop
    return out


def word_sources(
    tokenizer: Tokenizer,
    sentence: Translation,
    tokens: list[int],
    words: list[OutputWord],
    cross: np.ndarray,
    method: Method,
) -> WordSources | None:
    """The source as typed and, for each output word of ``tokens``, the source words ``method`` links it to, read
    off ``cross`` (L, H, T, S), the cross-attention of ``sentence.src_ids`` and ``tokens``; None when the source
    cannot be shown word by word."""
    src = tokenizer.src_pieces(sentence.src_ids)[:-1]  # x1 … x(S-1): the source EOS is no word (a sink)
    tgt = tokenizer.tgt_pieces(tokens)[:-1]  # y1 … y(T-1)
    src_groups = word_groups(src, [False] * len(src), punctuation=True)
    tgt_groups = word_groups(tgt, [False] * len(tgt), punctuation=True)
    typed = typed_words(tokenizer, sentence, src_groups, src)
    if typed is None:
        return None
    target_words = [w for w, group in enumerate(tgt_groups) for _ in group]  # groups: in order, every piece once
    source_words = [w for w, group in enumerate(src_groups) for _ in group]
    shape = (len(tgt_groups), len(src_groups))
    links = method.links(forced_pair(cross, target_words, source_words, shape)) if all(shape) else set()
    shown = {w: i for i, (_, covered) in enumerate(typed) for w in covered}  # the model's word -> the typed one
    lit = []
    for word in words:
        mine = {target_words[p] for p in word.positions}
        lit.append(frozenset(shown[s] for t, s in links if t in mine and s in shown))
    return WordSources([w for w, _ in typed], lit)
