"""Word alignments scored against human ones: gold files, gold words <-> subwords, extraction methods, AER.

Links are ``(target word, source word)`` pairs: (English index, Spanish index) as in the XL-WA gold files, for a
model translating Spanish into English; read ``reverse``d for English → Spanish.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm

from data.alignments import Link, parse_links  # Link: (target word, source word)
from lab.alignment.links import hard_links
from lab.attention.words import merge_columns, merge_rows


class GoldFormatError(ValueError):
    """A gold alignment file breaks its format; the message names file and line."""


@dataclass(frozen=True)
class GoldPair:
    """One human-aligned sentence pair, tokenised as the gold file gives it."""

    target: list[str]  # the model's output side: English tokens (Spanish for English → Spanish)
    source: list[str]  # the model's input side: Spanish tokens (English)
    links: frozenset[Link]


def read_gold(path: Path, reverse: bool = False) -> list[GoldPair]:
    """``english<TAB>spanish<TAB>i-j i-j …`` per line (tokens split on single spaces, 0-based indices); ``reverse``:
    English as the source, Spanish as the target, every link turned round."""
    pairs = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path}:{lineno}"
        fields = line.split("\t")
        if len(fields) != 3:
            raise GoldFormatError(f"{where}: expected 3 tab-separated columns, found {len(fields)}")
        target, source = fields[0].split(" "), fields[1].split(" ")
        try:
            links = frozenset(parse_links(fields[2]))
        except ValueError:
            raise GoldFormatError(f"{where}: links must be i-j with integer indices") from None
        if any(not (0 <= i < len(target) and 0 <= j < len(source)) for i, j in links):
            raise GoldFormatError(f"{where}: a link points past the {len(target)}×{len(source)} tokens")
        if reverse:  # English in, Spanish out: the columns swap and each link turns round
            target, source, links = source, target, frozenset((j, i) for i, j in links)
        pairs.append(GoldPair(target, source, links))
    return pairs


@dataclass(frozen=True)
class Score:
    """Corpus-level (micro-averaged) precision, recall and AER; with no sure/possible split AER = 1 − F1."""

    precision: float
    recall: float
    aer: float
    correct: int
    predicted: int
    gold: int


def score(predicted: Sequence[Iterable[Link]], gold: Sequence[Iterable[Link]]) -> Score:
    """Links counted over all sentences together (the usual AER), one predicted set per gold set."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted alignments for {len(gold)} gold ones")
    correct = n_predicted = n_gold = 0
    for p, g in zip(predicted, gold, strict=True):
        p, g = set(p), set(g)
        correct, n_predicted, n_gold = correct + len(p & g), n_predicted + len(p), n_gold + len(g)
    precision = correct / n_predicted if n_predicted else 0.0
    recall = correct / n_gold if n_gold else 0.0
    total = n_predicted + n_gold
    return Score(precision, recall, 1.0 - 2 * correct / total if total else 0.0, correct, n_predicted, n_gold)


OPENERS = frozenset("([{¿¡«“‘")  # no space after these
CLOSERS = frozenset(".,;:!?)]}»”…")  # no space before a token made only of these ("45 %" keeps its space)
QUOTES = frozenset('"')  # opens and closes in turn


def detokenize(tokens: Sequence[str]) -> tuple[str, list[int]]:
    """Running text for the model ("molten ." -> "molten.") and the character offset where each token starts."""
    text, starts = "", []
    glue_next, quote_open = True, False  # nothing goes before the first token
    for token in tokens:
        quote = token in QUOTES
        closing = quote and quote_open
        text += "" if glue_next or set(token) <= CLOSERS or closing else " "
        starts.append(len(text))
        text += token
        quote_open = quote_open != quote
        glue_next = token in OPENERS or (quote and not closing)
    return text, starts


def piece_words(
    sp: spm.SentencePieceProcessor, tokens: Sequence[str], read: Callable[[Sequence[str]], list[str]] = list
) -> tuple[list[int], list[int]]:
    """Subword ids of the detokenised text (EOS not added) and the gold token each belongs to: the one holding its first
    visible character (a bare "▁": the next). A token glued into a neighbour's subword gets no link. ``read``: how the
    vocabulary reads the tokens, one by one (``Tokenizer.src_tokens`` for the source: each keeps its case mark)."""
    text, starts = detokenize(read(tokens))
    byte_starts = [len(text[:s].encode("utf-8")) for s in starts]
    ids, words = [], []
    for piece in sp.encode_as_proto(text).pieces:
        surface = piece.surface
        visible = surface.lstrip()
        at = piece.end if not visible else piece.begin + len(surface.encode("utf-8")) - len(visible.encode("utf-8"))
        ids.append(piece.id)
        words.append(max(0, bisect.bisect_right(byte_starts, at) - 1))
    return ids, words


def groups(words_of_pieces: Sequence[int], n_words: int) -> list[list[int]]:
    """Piece indices of each word (empty for a word without its own piece)."""
    out: list[list[int]] = [[] for _ in range(n_words)]
    for piece, word in enumerate(words_of_pieces):
        out[word].append(piece)
    return out


def word_matrix(
    rows: np.ndarray, target_words: Sequence[int], source_words: Sequence[int], n_target: int, n_source: int
) -> np.ndarray:
    """(..., T, S) subword attention -> (..., n_target, n_source) gold words (docs/attention-pitfalls.md §4): a column
    the SUM of its subwords', a row the MEAN of its subwords' rows (zero for a word with none). Source EOS dropped."""
    row_groups, col_groups = groups(target_words, n_target), groups(source_words, n_source)
    filled = [w for w, g in enumerate(row_groups) if g]
    out = np.zeros((*rows.shape[:-2], n_target, n_source), dtype=rows.dtype)
    out[..., filled, :] = merge_rows(merge_columns(rows, col_groups), [row_groups[w] for w in filled])
    return out


def row_argmax(weights: np.ndarray) -> set[Link]:
    """Each target word (row) to its strongest source word; rows without weight give no link."""
    return {(link.target, link.source) for link in hard_links(weights, [False] * weights.shape[1]) if link.weight > 0}


def column_argmax(weights: np.ndarray) -> set[Link]:
    """Each source word (column) to the target word that attends to it most."""
    return {(i, j) for j, i in row_argmax(weights.T)}


def threshold(weights: np.ndarray, tau: float) -> set[Link]:
    """Every cell with at least ``tau`` of its row's weight (rows renormalised over the real source words)."""
    sums = weights.sum(axis=-1, keepdims=True)
    share = np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(share >= tau), strict=True)}


def subword_argmax(rows: np.ndarray, target_words: Sequence[int], source_words: Sequence[int]) -> set[Link]:
    """Shift-Att's induction (Chen et al. 2020): each target subword's row argmax over the source subwords;
    two words are aligned when any of their subwords are. Pass the "shift" rows, source EOS dropped."""
    return {(target_words[i], source_words[j]) for i, j in enumerate(rows.argmax(axis=-1))} if rows.size else set()
