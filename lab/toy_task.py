"""Watch it learn: the lab's own Transformer, tiny, trained live on a toy task (copy, reverse or sort a few symbols).

On real data the attention patterns form over hours; here in seconds, and one fixed example's cross-attention is
reported as it forms (reverse makes the anti-diagonal, copy the diagonal). Change one thing and see what breaks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from model.config import ModelConfig
from model.loss import token_loss
from model.transformer import Transformer

Task = Literal["reverse", "copy", "sort"]
Positions = Literal["sinusoidal", "learned", "none"]
TASKS: dict[str, Callable[[Tensor], Tensor]] = {  # (B, L) symbols -> (B, L) the answer
    "reverse": lambda x: x.flip(1),
    "copy": lambda x: x,
    "sort": lambda x: x.sort(1).values,
}
PAD, BOS, EOS, FIRST = 0, 2, 3, 4  # the model's special ids (ModelConfig defaults); symbols start at FIRST
SYMBOLS = "abcdefghijklmnop"  # how symbols are shown
MAX_STEPS, MAX_SECONDS = 3000, 60.0  # the page's ceiling on one run
HELD_OUT = 256  # sequences never trained on, scored every report


@dataclass(frozen=True)
class ToyConfig:
    """One toy run: the task, the sequences, the model's one changeable thing and the bounds."""

    task: Task = "reverse"
    length: int = 8
    n_symbols: int = 12
    n_layers: int = 1  # encoder and decoder layers each
    n_heads: int = 2
    positions: Positions = "sinusoidal"  # "none": the sinusoid table is zeroed, no order reaches the model
    d_model: int = 32
    batch_size: int = 64
    lr: float = 3e-3
    max_steps: int = 1500
    max_seconds: float = 45.0
    report_every: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        if not 2 <= self.n_symbols <= len(SYMBOLS) or not 2 <= self.length <= 12:
            raise ValueError(f"n_symbols must be in 2..{len(SYMBOLS)} and length in 2..12")
        if not 1 <= self.max_steps <= MAX_STEPS or not 0 < self.max_seconds <= MAX_SECONDS:
            raise ValueError(f"max_steps must be in 1..{MAX_STEPS} and max_seconds in (0, {MAX_SECONDS:g}]")

    def model_config(self) -> ModelConfig:
        """A ModelConfig as tests/conftest.py's tiny_config, sized to the task; no dropout (nothing to regularise)."""
        return ModelConfig(
            src_vocab_size=FIRST + self.n_symbols,
            tgt_vocab_size=FIRST + self.n_symbols,
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_ff=2 * self.d_model,
            n_encoder_layers=self.n_layers,
            n_decoder_layers=self.n_layers,
            dropout=0.0,
            max_positions=self.length + 2,
            positional="learned" if self.positions == "learned" else "sinusoidal",
        )


@dataclass(frozen=True)
class Progress:
    """One report of a run: where it is and what the fixed example's cross-attention looks like now."""

    step: int
    seconds: float
    loss: float  # mean cross-entropy per output token of the last batch
    accuracy: float  # share of held-out sequences answered exactly (greedy)
    cross: np.ndarray  # (H, T, S): last decoder layer's cross-attention of the fixed example, per head
    src: list[str]  # the example's source symbols, EOS last (the map's columns)
    out: list[str]  # its answer, EOS last (the map's rows)
    done: bool  # the last report: the step or time bound was reached


def symbols(ids: Tensor) -> list[str]:
    """Ids -> their shown symbols, EOS as </s>."""
    return ["</s>" if i == EOS else SYMBOLS[i - FIRST] for i in ids.tolist()]


def batch(config: ToyConfig, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(src, tgt_in, tgt_out), each (B, L+1): x EOS, BOS answer, answer EOS (no padding: all lengths equal)."""
    answer = TASKS[config.task](x)
    eos = torch.full((x.size(0), 1), EOS)
    bos = torch.full((x.size(0), 1), BOS)
    return torch.cat([x, eos], 1), torch.cat([bos, answer], 1), torch.cat([answer, eos], 1)


def codes(config: ToyConfig, x: Tensor) -> Tensor:
    """(B, L) symbols -> (B,) one integer per sequence (base n_symbols), to tell held-out sequences apart."""
    weights = config.n_symbols ** torch.arange(config.length)
    return ((x - FIRST) * weights).sum(1)


def sequences(config: ToyConfig, n: int, generator: torch.Generator, avoid: Tensor | None = None) -> Tensor:
    """(n, L) random symbols, none of them a sequence in ``avoid`` (codes): training never sees the held-out set."""
    high = FIRST + config.n_symbols
    x = torch.randint(FIRST, high, (n, config.length), generator=generator)
    while avoid is not None and (clash := torch.isin(codes(config, x), avoid)).any():
        x[clash] = torch.randint(FIRST, high, (int(clash.sum()), config.length), generator=generator)
    return x


def build(config: ToyConfig) -> Transformer:
    """A fresh, seeded toy model; with positions "none" its (fixed) sinusoid tables are zeroed."""
    torch.manual_seed(config.seed)
    model = Transformer(config.model_config())
    if config.positions == "none":
        with torch.no_grad():
            model.src_pos.table.zero_()
            model.tgt_pos.table.zero_()
    return model


@torch.inference_mode()
def measure(model: Transformer, test: tuple[Tensor, Tensor, Tensor]) -> tuple[float, np.ndarray]:
    """The share of ``test`` whose every output token is the argmax given the right prefix (greedy decoding's
    exact-match rate: one wrong argmax is a wrong greedy output), and its first sequence's (H, T, S) cross-attention
    in the last decoder layer."""
    src, tgt_in, tgt_out = test
    model.eval()
    right = (model(src, tgt_in).argmax(-1) == tgt_out).all(1)
    memory, src_mask, _ = model.encode(src[:1])
    _, _, cross = model.decode(tgt_in[:1], memory, src_mask, need_weights=True)
    model.train()
    return float(right.float().mean()), cross[-1][0].numpy().copy()


def train(config: ToyConfig) -> Iterator[Progress]:
    """Train a fresh toy model, yielding a ``Progress`` every ``report_every`` steps, until ``max_steps``,
    ``max_seconds`` (wall clock) or a report with every held-out sequence right, whichever comes first."""
    generator = torch.Generator().manual_seed(config.seed)
    held_out = sequences(config, HELD_OUT, generator)
    test = batch(config, held_out)  # its first sequence is the fixed example
    avoid = codes(config, held_out)
    model = build(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    start = time.perf_counter()
    for step in range(1, config.max_steps + 1):
        src, tgt_in, tgt_out = batch(config, sequences(config, config.batch_size, generator, avoid))
        loss = token_loss(model, src, tgt_in, tgt_out).loss.mean()  # no padding: every position is real
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        seconds = time.perf_counter() - start
        bounded = step == config.max_steps or seconds >= config.max_seconds
        if bounded or step % config.report_every == 0:
            right, cross = measure(model, test)
            done = bounded or right == 1.0
            src, out = symbols(test[0][0]), symbols(test[2][0])
            yield Progress(step, seconds, float(loss.detach()), right, cross, src, out, done)
            if done:
                return
