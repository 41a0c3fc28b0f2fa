"""The decoding steps: the choice at each step (the token taken, its probability, the most probable alternatives) and
beam search replayed one step at a time (the hypotheses alive and those that ended at each step).

One teacher-forced pass over the shown hypothesis gives, at every position, the next-token distribution the search
saw when it extended that prefix; the product of the chosen tokens' probabilities is the hypothesis's probability.

``model.decode.beam_search`` is the fast, batched search and keeps no history. ``beam_trace`` is the same rule for one
sentence without a cache (each step re-reads the whole prefix): keep the ``beam_size`` best prefixes by summed
log-probability; EOS ends a hypothesis only among the top ``beam_size`` candidates; stop when ``beam_size``
hypotheses have ended. A test checks that it ends with the hypotheses ``beam_search`` returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from data.tokenizer import Tokenizer
from model.decode import max_output_lengths
from model.intervention import Intervention
from model.transformer import Transformer
from translate.translator import DecodeOptions

TOP = 5


@dataclass(frozen=True)
class Choice:
    """Step ``step`` (0-based): the decoder saw ``<s> y1 … y(step)`` and produced ``token``."""

    step: int
    token: str
    log_prob: float  # log p(token | source, prefix)
    rank: int  # 1 = the most probable token at this step
    top: list[tuple[str, float]]  # the TOP most probable tokens and their probabilities, most probable first
    top_ids: tuple[int, ...] = ()  # the ids of those tokens, in the same order

    @property
    def prob(self) -> float:
        return math.exp(self.log_prob)


@torch.inference_mode()
def next_token_log_probs(
    model: Transformer, src_ids: list[int], tgt_in_ids: list[int], intervention: Intervention | None = None
) -> torch.Tensor:
    """(T, V) log p(next token) at each decoder input position: one forced pass, in float32, on the CPU."""
    if model.training:
        raise ValueError("the model is in training mode (dropout): call .eval() first")
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([tgt_in_ids], device=device)  # (1, T)
    memory, src_mask, _ = model.encode(src, intervention=intervention)
    hidden = model.decode(tgt_in, memory, src_mask, intervention=intervention).hidden  # (1, T, d_model)
    return model.output(hidden[0]).float().log_softmax(-1).cpu()  # (T, V)


def choices(model: Transformer, tokenizer: Tokenizer, src_ids: list[int], out_ids: list[int]) -> list[Choice]:
    """One Choice per output token of ``out_ids`` (EOS last), for the source ``src_ids``."""
    tgt_in = [model.config.bos_id, *out_ids[:-1]]
    log_probs = next_token_log_probs(model, src_ids, tgt_in)  # (T, V)
    chosen = torch.tensor(out_ids)
    chosen_lp = log_probs.gather(1, chosen[:, None])[:, 0]  # (T,)
    ranks = (log_probs > chosen_lp[:, None]).sum(1) + 1  # (T,)
    best_lp, best_ids = log_probs.topk(min(TOP, log_probs.size(1)), dim=1)  # (T, TOP)
    piece, out = tokenizer.tgt.id_to_piece, []
    for step, token in enumerate(out_ids):
        top = [(piece(int(i)), float(lp.exp())) for i, lp in zip(best_ids[step], best_lp[step], strict=True)]
        ids = tuple(int(i) for i in best_ids[step])
        out.append(Choice(step, piece(token), float(chosen_lp[step]), int(ranks[step]), top, ids))
    return out


def prefix_with(out_ids: list[int], step: int, token: int) -> list[int]:
    """The output up to step ``step`` (0-based) with ``token`` taken there: what to force to try another candidate."""
    return [*out_ids[:step], token]


@dataclass(frozen=True)
class Beam:
    """One hypothesis: output ids so far (EOS last once it has ended) and their summed log-probability."""

    ids: list[int]
    pieces: list[str]
    text: str
    log_prob: float
    score: float  # log_prob / length**length_penalty (what the final ranking uses)


@dataclass(frozen=True)
class BeamStep:
    step: int  # 0-based: the step that chose output token ``step + 1``
    alive: list[Beam]  # prefixes kept for the next step, best first
    ended: list[Beam]  # hypotheses that took EOS at this step


@torch.inference_mode()
def beam_trace(
    model: Transformer, tokenizer: Tokenizer, src_ids: list[int], beam_size: int = 4, length_penalty: float = 1.0
) -> list[BeamStep]:
    """Every step of beam search over one source sentence ``src_ids`` (EOS last), within the Translator's limits."""
    if model.training:
        raise ValueError("the model is in training mode (dropout): call .eval() first")
    c, k = model.config, beam_size
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)  # (1, S)
    a, b = DecodeOptions.max_len_a, DecodeOptions.max_len_b
    limit = int(max_output_lengths((src != c.pad_id).sum(1), a, b, c.max_positions)[0])
    memory, src_mask, _ = model.encode(src)

    def beam(ids: list[int], log_prob: float) -> Beam:
        pieces = [tokenizer.tgt.id_to_piece(i) for i in ids]
        score = log_prob / (len(ids) ** length_penalty) if length_penalty and ids else log_prob
        return Beam(ids, pieces, tokenizer.decode_tgt(ids), log_prob, score)

    alive, steps, n_ended = [beam([], 0.0)], [], 0
    for step in range(limit):
        n = len(alive)
        tgt_in = torch.tensor([[c.bos_id, *b.ids] for b in alive], device=device)  # (n, step + 1)
        hidden = model.decode(tgt_in, memory.expand(n, -1, -1), src_mask.expand(n, -1, -1, -1)).hidden
        logp = model.output(hidden[:, -1]).float().log_softmax(-1)  # (n, V)
        if step == limit - 1:  # out of room: only EOS may follow
            logp = torch.full_like(logp, float("-inf")).index_copy(1, torch.tensor([c.eos_id]), logp[:, [c.eos_id]])
        vocab = logp.size(1)
        totals = torch.tensor([b.log_prob for b in alive], device=device)[:, None] + logp  # (n, V)
        top_lp, top_index = totals.view(-1).topk(min(2 * k, totals.numel()))
        kept, ended = [], []
        for rank, (lp, index) in enumerate(zip(top_lp.tolist(), top_index.tolist(), strict=True)):
            if lp == float("-inf"):
                break
            origin, token = divmod(index, vocab)
            if token == c.eos_id and rank >= k:  # EOS counts only among the top k (as model.decode)
                continue
            if token == c.eos_id:
                ended.append(beam([*alive[origin].ids, token], lp))
                if n_ended + len(ended) >= k:
                    break
            elif len(kept) < k:
                kept.append(beam([*alive[origin].ids, token], lp))
        steps.append(BeamStep(step, kept, ended))
        n_ended += len(ended)
        if n_ended >= k or not kept:
            break
        alive = kept
    return steps


NOT_YET = "—"  # the final score of a hypothesis still growing: given only once it ends with </s>


def step_table(step: BeamStep) -> list[dict[str, object]]:
    """Rows for a table of one step: the hypotheses kept (best first), then those that ended here."""
    rows: list[dict[str, object]] = [
        {"": f"alive #{rank + 1}", "hypothesis": " ".join(b.pieces), "log-probability": b.log_prob, "score": NOT_YET}
        for rank, b in enumerate(step.alive)
    ]
    rows += [
        {"": "ended", "hypothesis": " ".join(b.pieces), "log-probability": b.log_prob, "score": f"{b.score:.3f}"}
        for b in step.ended
    ]
    return rows


CHOSEN, KEPT, PRUNED, ENDED = "chosen path", "kept", "pruned", "ended"
FATES = (CHOSEN, KEPT, PRUNED, ENDED)
TREE_COLUMNS = ("node", "parent", "step", "token", "hypothesis", "log_prob", "fate", "ended")


def node_key(ids: Sequence[int]) -> str:
    """A hypothesis's name in the tree: its output ids, space-separated ("" is the root, ``<s>`` alone)."""
    return " ".join(str(i) for i in ids)


def beam_tree(steps: list[BeamStep], chosen: Sequence[int]) -> list[dict[str, object]]:
    """One row per hypothesis the search held, root first: its parent (one token shorter), whether it took </s>,
    and its fate: on the path of ``chosen`` (the output ids shown, EOS last); kept and extended at the next step;
    pruned (extended by none of the next step's survivors); ended (took </s>, not the one shown)."""
    path = {node_key(chosen[:n]) for n in range(len(chosen) + 1)}
    extended = {node_key(b.ids[:-1]) for s in steps for b in s.alive + s.ended}
    rows = [dict(zip(TREE_COLUMNS, ("", None, 0, "<s>", "<s>", 0.0, CHOSEN, False), strict=True))]
    for s in steps:
        for b, alive in [(b, True) for b in s.alive] + [(b, False) for b in s.ended]:
            key = node_key(b.ids)
            fate = CHOSEN if key in path else KEPT if alive and key in extended else PRUNED if alive else ENDED
            row = (key, node_key(b.ids[:-1]), s.step + 1, b.pieces[-1], " ".join(b.pieces), b.log_prob, fate, not alive)
            rows.append(dict(zip(TREE_COLUMNS, row, strict=True)))
    return rows
