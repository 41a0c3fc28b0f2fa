"""The lab's one call into the model: translate a sentence and return every hypothesis with its maps as numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lab.maps import SentenceMaps
from model.inspect import AttentionMaps
from model.layers import sinusoidal_table
from model.translate import DecodeOptions, Translator

DEFAULT_THREADS = 1  # the app shares a small CPU with training jobs


@dataclass(frozen=True)
class Candidate:
    """One hypothesis of the n-best list and the maps of a forced pass over exactly it (ATTENTION.md §6)."""

    text: str
    score: float  # length-normalised log-probability (what beam search ranks by)
    log_prob: float
    maps: SentenceMaps


@dataclass(frozen=True)
class Explanation:
    source: str
    truncated: bool  # the source was cut to ``max_src_len`` subwords
    max_src_len: int
    candidates: list[Candidate]  # best first

    @property
    def text(self) -> str:
        return self.candidates[0].text


def set_threads(setting: str | None) -> int:
    """Use ``setting`` (e.g. the LAB_THREADS variable) torch threads, default 1; returns the number used."""
    n = int(setting) if setting and setting.strip().isdigit() and int(setting) > 0 else DEFAULT_THREADS
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def sentence_maps(translator: Translator, maps: AttentionMaps) -> SentenceMaps:
    """Tensors -> numpy arrays, ids -> subword pieces and special-token flags."""
    c = translator.model.config
    tok = translator.tokenizer
    special = {c.bos_id, c.eos_id, c.pad_id}

    def flags(ids: list[int], which: set[int]) -> list[bool]:
        return [i in which for i in ids]

    return SentenceMaps(
        encoder=maps.encoder.numpy(),
        decoder=maps.decoder.numpy(),
        cross=maps.cross.numpy(),
        src=tok.src_pieces(maps.src_ids),
        tgt_in=tok.tgt_pieces(maps.tgt_in_ids),
        tgt_out=tok.tgt_pieces(maps.tgt_out_ids),
        src_special=flags(maps.src_ids, special),
        tgt_in_special=flags(maps.tgt_in_ids, special),
        tgt_out_special=flags(maps.tgt_out_ids, special),
        src_pad=flags(maps.src_ids, {c.pad_id}),
        tgt_in_pad=flags(maps.tgt_in_ids, {c.pad_id}),
    )


def explain(translator: Translator, text: str, options: DecodeOptions | None = None) -> Explanation:
    """Translate ``text`` and replay each returned hypothesis to get its attention maps."""
    result = translator.translate(text, options or DecodeOptions())
    candidates = [
        Candidate(result.texts[i], hyp.score, hyp.log_prob, sentence_maps(translator, translator.attention(result, i)))
        for i, hyp in enumerate(result.hypotheses)
    ]
    return Explanation(text, result.truncated, translator.max_src_len, candidates)


def positional_table(translator: Translator, n_positions: int) -> np.ndarray:
    """(n_positions, d_model) position signal the model adds to its embeddings (fixed sinusoids or learned)."""
    c = translator.model.config
    n = max(1, min(n_positions, c.max_positions))
    if c.positional == "learned":
        return translator.model.src_pos.table[:n].detach().float().cpu().numpy()
    return sinusoidal_table(n, c.d_model).numpy()
