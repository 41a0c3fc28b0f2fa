"""Word alignments of sentence pairs: eflomal's links, symmetrised, as Pharaoh lines, and the attention rows
guided alignment teaches one cross-attention head with them.

A link is ``(target index, source index)``, English then Spanish: the order of XL-WA's gold files and of the lab.
A Pharaoh line writes a pair's links as ``i-j i-j …`` in that order (not Moses's source-target order).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import Tensor

from data.corpus import Pair
from data.tokenizer import Tokenizer

Link = tuple[int, int]  # (target index, source index)
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], backward: set[Link]) -> set[Link]:
    """Koehn et al.'s symmetrisation: start from the intersection, grow into neighbouring union links that
    cover a new row or column, then add directional links whose row and column are both still unaligned."""
    union, links = forward | backward, forward & backward
    rows, cols = {i for i, _ in links}, {j for _, j in links}

    def add(i: int, j: int) -> None:
        links.add((i, j))
        rows.add(i)
        cols.add(j)

    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in NEIGHBOURS:
                n = (i + di, j + dj)
                if n in union and n not in links and (n[0] not in rows or n[1] not in cols):
                    add(*n)
                    grown = True
    for direction in (forward, backward):
        for i, j in sorted(direction):
            if i not in rows and j not in cols:
                add(i, j)
    return links


def parse_links(line: str) -> set[Link]:
    """One Pharaoh line (``i-j`` pairs, space-separated; empty = no link) -> its links."""
    return {(int(i), int(j)) for i, j in (link.split("-") for link in line.split())}


def format_links(links: Iterable[Link]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def read_links(path: Path) -> list[set[Link]]:
    """A Pharaoh file: one line of links per sentence pair."""
    return [parse_links(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def write_links(path: Path, links: Iterable[Iterable[Link]]) -> None:
    Path(path).write_text("".join(format_links(pair) + "\n" for pair in links), encoding="utf-8")


def eflomal_links(pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[set[Link]] | None:
    """eflomal (Östling & Tiedemann 2016) on (target tokens, source tokens) pairs, both directions symmetrised
    with grow-diag-final-and; one link set per pair, or None when the package is not installed. eflomal seeds
    itself from /dev/urandom (it has no seed option): links can differ between runs."""
    try:
        from eflomal import Aligner
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        forward, backward = Path(tmp) / "forward", Path(tmp) / "backward"
        Aligner().align(
            [" ".join(target) for target, _ in pairs],
            [" ".join(source) for _, source in pairs],
            links_filename_fwd=str(forward),
            links_filename_rev=str(backward),
        )
        forward_links, backward_links = read_links(forward), read_links(backward)
    if not len(forward_links) == len(backward_links) == len(pairs):
        raise RuntimeError(f"eflomal returned {len(forward_links)}/{len(backward_links)} lines for {len(pairs)} pairs")
    return [grow_diag_final_and(f, b) for f, b in zip(forward_links, backward_links, strict=True)]


def piece_pairs(pairs: Sequence[Pair], tokenizer: Tokenizer) -> list[tuple[list[str], list[str]]]:
    """(target pieces, source pieces) of each pair, EOS left out: piece i is id i of the encoded side."""
    targets = tokenizer.tgt.encode([p.tgt for p in pairs], out_type=str)
    sources = tokenizer.src.encode([tokenizer.src_text(p.src) for p in pairs], out_type=str)
    return list(zip(targets, sources, strict=True))


def attention_target(links: Iterable[Link], n_tgt: int, n_src: int) -> Tensor:
    """(T, S) rows that guided alignment (Garg et al. 2019) asks of one cross-attention head; ``n_tgt`` and ``n_src``
    count each side's ids with EOS (``y1 … y(T-1) </s>``, ``x1 … x(S-1) </s>``). Row i, which predicts target piece i,
    is uniform over the source pieces linked to it; a row with no link, the EOS row, and links past a truncated side
    are all zero (no supervision there). The EOS column never gets weight."""
    target = torch.zeros(n_tgt, n_src)
    for i, j in links:
        if i < n_tgt - 1 and j < n_src - 1:
            target[i, j] = 1.0
    return target / target.sum(dim=-1, keepdim=True).clamp_min(1.0)
