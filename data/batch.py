"""Token-budget batches with length bucketing; padded tensors for the model."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property

import sentencepiece as spm
import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from data.alignments import Link, attention_target
from data.corpus import Pair
from data.entities import EntityConfig, EntityFinder, EntityPool, substitute
from data.noise import NoiseConfig, add_noise
from data.tokenizer import Tokenizer


@dataclass(frozen=True)
class Example:
    src: list[int]  # x1 … xS </s>
    tgt: list[int]  # y1 … yT </s>
    links: tuple[Link, ...] = ()  # guided alignment: (target piece, source piece) links; () = none this epoch


@dataclass(frozen=True)
class Batch:
    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T): <s> y1 … yT
    tgt_out: Tensor  # (B, T): y1 … yT </s>
    n_tgt_tokens: int  # real (non-pad) target tokens
    alignment: Tensor | None = None  # (B, T, S): guided alignment's target rows (data/alignments.py), or None

    def to(self, device: torch.device) -> Batch:
        src, tgt_in, tgt_out, alignment = (
            None if t is None else t.to(device, non_blocking=True)
            for t in (self.src, self.tgt_in, self.tgt_out, self.alignment)
        )
        return Batch(src, tgt_in, tgt_out, self.n_tgt_tokens, alignment)


def truncate(ids: list[int], max_len: int) -> list[int]:
    """At most ``max_len`` ids, EOS kept last."""
    return ids[: max_len - 1] + ids[-1:] if len(ids) > max_len else ids


def encode_pairs(pairs: list[Pair], tokenizer: Tokenizer, max_len: int) -> list[Example]:
    """Tokenize pairs, truncating each side to ``max_len`` ids (EOS kept last)."""
    return [
        Example(truncate(tokenizer.encode_src(p.src), max_len), truncate(tokenizer.encode_tgt(p.tgt), max_len))
        for p in pairs
    ]


@dataclass(frozen=True)
class TrainingSet:
    """The training examples of each epoch: the same pairs, names swapped (``entities``), then the source noised
    (``noise``) and both sides re-segmented (``sampling_alpha`` > 0: SentencePiece subword sampling, Kudo 2018). All
    draw from (seed, epoch) alone, so an epoch's examples are the same after ``--resume`` and on every process; with
    none, every epoch is the same list, encoded once. An example keeps its ``links`` (guided alignment: eflomal's
    links of the pair's clean pieces) only while both its sides are the clean ones.
    """

    pairs: list[Pair]
    tokenizer: Tokenizer
    max_len: int
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    sampling_alpha: float = 0.0
    seed: int = 1
    links: list[tuple[Link, ...]] | None = None  # one per pair, or None without guided alignment
    entities: EntityConfig = field(default_factory=EntityConfig)

    @cached_property
    def _clean(self) -> list[Example]:
        examples = encode_pairs(self.pairs, self.tokenizer, self.max_len)
        if self.links is None:
            return examples
        return [Example(e.src, e.tgt, links) for e, links in zip(examples, self.links, strict=True)]

    @cached_property
    def _entities(self) -> tuple[EntityFinder, EntityPool]:
        """The corpus's names and the training pool: built once, on the first epoch that swaps names."""
        return EntityFinder.from_pairs(self.pairs, EntityPool.build(held=None)), EntityPool.build()

    def epoch_pairs(self, epoch: int) -> tuple[list[Pair], int]:
        """This epoch's pairs after the name swaps (the same list without them), and how many names were swapped."""
        if not self.entities.enabled:
            return self.pairs, 0
        finder, pool = self._entities
        rng = random.Random(self.seed * 1_000_033 + epoch)  # its own stream: the noise keeps its draws
        swapped = [substitute(p, finder, pool, rng, self.entities) for p in self.pairs]
        return [p for p, _ in swapped], sum(n for _, n in swapped)

    def epoch(self, epoch: int) -> list[Example]:
        if not self.noise.enabled and self.sampling_alpha <= 0 and not self.entities.enabled:
            return self._clean
        pairs, _ = self.epoch_pairs(epoch)
        rng = random.Random(self.seed * 1_000_003 + epoch)
        sources = [add_noise(p.src, self.noise, rng) for p in pairs]
        if self.sampling_alpha <= 0:  # only the sentences swapped or noised need encoding again
            t, n = self.tokenizer, self.max_len
            return [
                ex
                if s == p.src and q is p
                else Example(
                    truncate(t.encode_src(s), n), ex.tgt if q.tgt == p.tgt else truncate(t.encode_tgt(q.tgt), n)
                )
                for s, q, p, ex in zip(sources, pairs, self.pairs, self._clean, strict=True)
            ]
        spm.set_random_generator_seed((self.seed * 1_000_003 + epoch) % 2**32)  # SentencePiece takes 32 bits
        t = self.tokenizer
        sample = {"enable_sampling": True, "alpha": self.sampling_alpha, "nbest_size": -1}
        src_ids = t.src.encode([t.src_text(s) for s in sources], **sample)
        tgt_ids = t.tgt.encode([p.tgt for p in pairs], **sample)
        return [
            Example(truncate(s + [t.src.eos_id()], self.max_len), truncate(g + [t.tgt.eos_id()], self.max_len))
            for s, g in zip(src_ids, tgt_ids, strict=True)
        ]


def batch_indices(
    examples: list[Example], max_tokens: int, seed: int, epoch: int, bucketing: bool = True, shuffle: bool = True
) -> list[list[int]]:
    """Group example indices so that each padded batch holds at most ``max_tokens`` source or target tokens. With
    bucketing, examples are sorted by length (random tie-breaks) so a batch holds similar lengths; batches are then
    shuffled. Deterministic in (seed, epoch): this is what makes exact resume possible."""
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


def collate(examples: list[Example], pad_id: int, bos_id: int, alignment: bool = False) -> Batch:
    """Pad a list of examples into one Batch; with ``alignment``, guided alignment's target rows too."""

    def padded(rows: list[list[int]]) -> Tensor:
        return pad_sequence([torch.tensor(r, dtype=torch.long) for r in rows], batch_first=True, padding_value=pad_id)

    src = padded([e.src for e in examples])  # (B, S)
    tgt_in = padded([[bos_id] + e.tgt[:-1] for e in examples])  # (B, T)
    tgt_out = padded([e.tgt for e in examples])  # (B, T)
    targets = None
    if alignment:
        # (B, T, S): padded rows and columns stay zero (not supervised)
        targets = torch.zeros(*tgt_out.shape, src.size(1))
        for row, e in enumerate(examples):
            targets[row, : len(e.tgt), : len(e.src)] = attention_target(e.links, len(e.tgt), len(e.src))
    return Batch(src, tgt_in, tgt_out, sum(len(e.tgt) for e in examples), targets)


def padding_fraction(examples: list[Example], batches: list[list[int]]) -> float:
    """Share of padded positions (source and target together) over all batches."""
    real = padded = 0
    for batch in batches:
        srcs = [len(examples[i].src) for i in batch]
        tgts = [len(examples[i].tgt) for i in batch]
        real += sum(srcs) + sum(tgts)
        padded += max(srcs) * len(srcs) + max(tgts) * len(tgts)
    return 1.0 - real / padded if padded else 0.0
