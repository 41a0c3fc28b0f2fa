"""Guided alignment (Garg et al. 2019): one cross-attention head is taught eflomal's word alignments.

Preparing a run writes eflomal's links between the subword pieces of every training pair (both directions,
symmetrised with grow-diag-final-and; data/alignments.py) to ``splits/train.align``. Training adds
``weight`` × the alignment loss of one head (``[optim.guided_alignment]``) to the translation loss: row t of that
head's cross-attention, the row that predicts y_t (docs/attention-pitfalls.md §1), is asked to be uniform over
the source pieces linked to y_t. Rows without a link (EOS, unaligned words) are not supervised.

The source side is re-noised each epoch (data/noise.py): a noised sentence has other pieces than the ones
eflomal aligned, so only the pairs the noise left unchanged carry links in that epoch.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
from torch import Tensor

from data.alignments import Link, eflomal_links, piece_pairs, read_links, write_links
from data.corpus import Pair
from data.tokenizer import Tokenizer
from model.config import ConfigError
from model.run_dir import train_links_file

log = logging.getLogger("training")
MISSING_ALIGNER = "optim.guided_alignment.weight > 0 needs the eflomal aligner (pip install eflomal)"
EPS = 1e-9  # floor of an attention weight under the log: a weight that underflowed costs -log(EPS) ≈ 21 nats


def check_aligner() -> None:
    """Fail before any data is read, naming the option, when eflomal is not installed."""
    try:
        import eflomal  # noqa: F401
    except ImportError:
        raise ConfigError(MISSING_ALIGNER) from None


def write_alignments(pairs: list[Pair], tokenizer: Tokenizer, run_dir: Path) -> None:
    """eflomal's links between the pieces of each training pair, one Pharaoh line per pair (target-source)."""
    started = time.perf_counter()
    links = eflomal_links(piece_pairs(pairs, tokenizer))
    if links is None:
        raise ConfigError(MISSING_ALIGNER)
    write_links(train_links_file(run_dir), links)
    per_pair = sum(map(len, links)) / max(1, len(links))
    log.info(
        "guided alignment: eflomal aligned %d pairs in %.0f s, %.1f links per pair",
        len(links),
        time.perf_counter() - started,
        per_pair,
    )


def read_alignments(run_dir: Path, n_pairs: int) -> list[tuple[Link, ...]]:
    """The links written by ``write_alignments``, one tuple per training pair."""
    path = train_links_file(run_dir)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (guided alignment reads the links written when the run started)")
    links = read_links(path)
    if len(links) != n_pairs:
        raise ValueError(f"{path}: {len(links)} lines for {n_pairs} training pairs")
    return [tuple(sorted(pair)) for pair in links]


def alignment_loss(attention: Tensor, target: Tensor) -> Tensor:
    """Sum over the supervised rows of KL(target row ‖ attention row); attention and target are (B, T, S). Target rows
    sum to 1, or are all zero where nothing is supervised (those add nothing). Garg et al. minimise the cross-entropy;
    the KL divergence differs from it by the targets' entropy, a constant, so the gradient is the same, and it is 0
    exactly when the head's rows equal the targets."""
    attention = attention.float()
    return (torch.xlogy(target, target) - target * attention.clamp_min(EPS).log()).sum()
