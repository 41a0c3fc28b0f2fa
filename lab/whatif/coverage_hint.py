"""A coverage hint (NMTVis's "might not be translated"): source words that got little cross-attention in total.

Each output subword spends 1 unit of attention (its row sums to 1) over the source; a source word's total is the
sum of its subwords' columns over every output row (mean of heads, one layer). A word whose total is below the
threshold was hardly looked at while writing the whole output. A hint, not proof: attention is not explanation, and
a word can be translated through other heads or layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.attention.sentence_maps import SentenceMaps
from lab.attention.words import merge_columns, word_groups, word_labels

THRESHOLD = 0.3  # default: less than a third of one output subword's attention, over the whole output


@dataclass(frozen=True)
class WordCoverage:
    word: str
    total: float  # cross-attention received over all output rows (units of one output subword's attention)
    low: bool  # below the threshold


def coverage(maps: SentenceMaps, layer: int, threshold: float = THRESHOLD) -> list[WordCoverage]:
    """Every source word but EOS/padding, in order, with its total cross-attention at ``layer`` (mean of heads)."""
    weights = maps.cross[layer].mean(axis=0)  # (T, S): the mean of heads (a display choice)
    groups = word_groups(maps.src, maps.src_special)
    totals = merge_columns(weights, groups).sum(axis=0)  # (words,): rows summed
    labels = word_labels(maps.src, groups)
    keep = [not all(maps.src_special[i] for i in g) for g in groups]
    return [
        WordCoverage(label, float(total), bool(total < threshold))
        for label, total, kept in zip(labels, np.asarray(totals), keep, strict=True)
        if kept
    ]
