"""Token-budget batches with length bucketing; padded tensors for the model."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from torch import Tensor

from data.corpus import Pair
from model.tokenizer import Tokenizer


@dataclass(frozen=True)
class Example:
    src: list[int]  # x1 … xS </s>
    tgt: list[int]  # y1 … yT </s>


@dataclass(frozen=True)
class Batch:
    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T): <s> y1 … yT
    tgt_out: Tensor  # (B, T): y1 … yT </s>
    n_tgt_tokens: int  # real (non-pad) target tokens

    def to(self, device: torch.device) -> Batch:
        return Batch(
            self.src.to(device, non_blocking=True),
            self.tgt_in.to(device, non_blocking=True),
            self.tgt_out.to(device, non_blocking=True),
            self.n_tgt_tokens,
        )


def encode_pairs(pairs: list[Pair], tokenizer: Tokenizer, max_len: int) -> list[Example]:
    """Tokenize pairs, truncating each side to ``max_len`` ids (EOS kept last)."""
    out = []
    for p in pairs:
        src, tgt = tokenizer.encode_src(p.src), tokenizer.encode_tgt(p.tgt)
        out.append(
            Example(
                src[: max_len - 1] + src[-1:] if len(src) > max_len else src,
                tgt[: max_len - 1] + tgt[-1:] if len(tgt) > max_len else tgt,
            )
        )
    return out


def batch_indices(
    examples: list[Example], max_tokens: int, seed: int, epoch: int, bucketing: bool = True, shuffle: bool = True
) -> list[list[int]]:
    """Group example indices so that each padded batch holds at most ``max_tokens`` source or target tokens.

    With bucketing, examples are sorted by length (random tie-breaks) so a batch holds similar lengths;
    batches are then shuffled. Deterministic in (seed, epoch): this is what makes exact resume possible.
    """
    rng = random.Random(seed * 100_003 + epoch)
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)
    if bucketing:
        order.sort(key=lambda i: (len(examples[i].src), len(examples[i].tgt)))
    batches, current, longest = [], [], 0
    for i in order:
        length = max(len(examples[i].src), len(examples[i].tgt) + 1)
        if current and max(longest, length) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, length)
    if current:
        batches.append(current)
    if shuffle:
        rng.shuffle(batches)
    return batches


def collate(examples: list[Example], pad_id: int, bos_id: int) -> Batch:
    """Pad a list of examples into one Batch."""
    b = len(examples)
    s = max(len(e.src) for e in examples)
    t = max(len(e.tgt) for e in examples)
    src = torch.full((b, s), pad_id, dtype=torch.long)
    tgt_in = torch.full((b, t), pad_id, dtype=torch.long)
    tgt_out = torch.full((b, t), pad_id, dtype=torch.long)
    for row, e in enumerate(examples):
        src[row, : len(e.src)] = torch.tensor(e.src)
        tgt_in[row, : len(e.tgt)] = torch.tensor([bos_id] + e.tgt[:-1])
        tgt_out[row, : len(e.tgt)] = torch.tensor(e.tgt)
    return Batch(src, tgt_in, tgt_out, sum(len(e.tgt) for e in examples))


def padding_fraction(examples: list[Example], batches: list[list[int]]) -> float:
    """Share of padded positions (source and target together) over all batches."""
    real = padded = 0
    for batch in batches:
        srcs = [len(examples[i].src) for i in batch]
        tgts = [len(examples[i].tgt) for i in batch]
        real += sum(srcs) + sum(tgts)
        padded += max(srcs) * len(srcs) + max(tgts) * len(tgts)
    return 1.0 - real / padded if padded else 0.0
