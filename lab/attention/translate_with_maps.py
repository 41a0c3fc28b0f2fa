"""The lab's one call into the model: translate a text piece by piece, then the maps of one hypothesis on demand.

Every weight on the page comes from ``maps_of``: one forced pass (``model.attention_maps.inspect``) over exactly the
hypothesis shown, never what the last beam step left behind (docs/attention-pitfalls.md §6).

Two models on one sentence (``compare``): model B reads model A's source and translation, so the two sets of maps line
up cell by cell and B − A says where B attends differently (LIT's side-by-side mode, for attention). A pair of models
that do not read the same tokens with the same layers and heads is said, not drawn."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace

import numpy as np
import torch

from lab.attention.map_views import MapView, map_view
from lab.attention.sentence_maps import KINDS, Kind, SentenceMaps
from model.attention_maps import inspect
from model.layers import sinusoidal_table
from translate.name_guard import unmarked
from translate.settings import MAX_THREADS
from translate.translator import DecodeOptions, Translation, Translator

DEFAULT_THREADS = 1  # the app shares a small CPU with training jobs
BATCH = 32  # pieces translated together
EMPTY = "(empty)"  # how an empty translation is shown: a blank row reads as a display bug


def shown(text: str) -> str:
    """A translation as the page shows it: EMPTY when the model produced nothing."""
    return text if text.strip() else EMPTY


@dataclass(frozen=True)
class TextTranslation:
    """A text's translation: every piece with its n-best list (the maps are computed later, per hypothesis)."""

    source: str
    sentences: list[Translation]  # the input's pieces in order; one when the input is short
    max_src_len: int
    left_out: tuple[str, ...] = ()  # characters the vocabulary has no form for (data/source_chars.py)

    @property
    def text(self) -> str:
        """The whole translation: the best hypothesis of every piece, in order."""
        return " ".join(s.text.strip() for s in self.sentences if s.text.strip())


def _which(indices: list[int], several: bool) -> str:
    """Sentences named for a notice: "the sentence", "sentence 3" or "sentences 3, 7 and 9" (1-based)."""
    if not several:
        return "the sentence"
    numbers = [str(i + 1) for i in indices]
    return f"sentence {numbers[0]}" if len(numbers) == 1 else f"sentences {', '.join(numbers[:-1])} and {numbers[-1]}"


MAX_NAMED = 10  # characters a notice names; it counts the rest


def _named(ch: str) -> str:
    """ "😀" -> "😀 (GRINNING FACE)", "@" -> "COMMERCIAL AT": an ASCII character only by its Unicode name, since the
    page renders notices as markdown and every markdown sign is ASCII."""
    name = unicodedata.name(ch, f"U+{ord(ch):04X}")
    return f"{ch} ({name})" if ord(ch) > 127 and unicodedata.category(ch)[0] not in "CZ" else name


def notices(result: TextTranslation) -> list[str]:
    """What the page must say about characters left out, cut inputs and cut best translations (other cuts: in lists)."""
    several = len(result.sentences) > 1
    out = []
    if result.left_out:
        shown = ", ".join(_named(ch) for ch in result.left_out[:MAX_NAMED])
        more = f" and {len(result.left_out) - MAX_NAMED} more" if len(result.left_out) > MAX_NAMED else ""
        out.append(
            f"Left out of the input, not in this model's vocabulary: {shown}{more}. The model read the rest; the maps "
            "show its tokens."
        )
    cut_inputs = [i for i, s in enumerate(result.sentences) if s.truncated]
    if cut_inputs:
        out.append(
            f"The input of {_which(cut_inputs, several)} is longer than this model accepts ({result.max_src_len} "
            "subwords): only its beginning was translated."
        )
    cut_outputs = [i for i, s in enumerate(result.sentences) if s.best.truncated]
    if cut_outputs:
        out.append(
            f"The translation of {_which(cut_outputs, several)} stopped at the output length limit: the model had "
            "not finished, the end is missing."
        )
    return out


def set_threads(setting: str | None) -> int:
    """Use ``setting`` (e.g. the LAB_THREADS variable) torch threads, 1 … MAX_THREADS, else 1; returns the number."""
    n = int(setting) if setting and setting.strip().isdigit() and 0 < int(setting) <= MAX_THREADS else DEFAULT_THREADS
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def translate_text(translator: Translator, text: str, options: DecodeOptions | None = None) -> TextTranslation:
    """Translate ``text`` piece by piece (``Translator.pieces``, batched); maps are computed later, per hypothesis."""
    options = options or DecodeOptions()
    read = translator.tokenizer.src_reading(unmarked(text)[0] if options.marks else text)  # unpaired: MarkError
    results = translator.translate_all(translator.pieces(text), options, batch_size=BATCH)
    return TextTranslation(text, results, translator.max_src_len, read.left_out)


def without_guard(
    translator: Translator, texts: list[str], results: list[Translation], options: DecodeOptions, batch_size: int
) -> list[Translation]:
    """Each text's translation by the model alone: ``results``' own where the guard changed nothing, else anew."""
    guarded = [i for i, result in enumerate(results) if result.guarded is not None]
    alone = replace(options, name_guard=False)
    again = translator.translate_all([texts[i] for i in guarded], alone, batch_size=batch_size) if guarded else []
    typed = dict(zip(guarded, again, strict=True))
    return [typed.get(i, result) for i, result in enumerate(results)]


def maps_of(translator: Translator, src_ids: list[int], tokens: list[int]) -> SentenceMaps:
    """Every map of one (source, hypothesis) pair, from a forced pass over exactly that hypothesis."""
    maps = inspect(translator.model, list(src_ids), list(tokens))
    c, tok = translator.model.config, translator.tokenizer
    special = {c.bos_id, c.eos_id, c.pad_id}

    def flags(ids: list[int], which: set[int]) -> list[bool]:
        return [i in which for i in ids]

    return SentenceMaps(
        maps=maps,
        src=tok.src_pieces(maps.src_ids),
        tgt_in=tok.tgt_pieces(maps.tgt_in_ids),
        tgt_out=tok.tgt_pieces(maps.tgt_out_ids),
        src_special=flags(maps.src_ids, special),
        tgt_in_special=flags(maps.tgt_in_ids, special),
        tgt_out_special=flags(maps.tgt_out_ids, special),
        src_pad=flags(maps.src_ids, {c.pad_id}),
        tgt_in_pad=flags(maps.tgt_in_ids, {c.pad_id}),
    )


def positional_table(translator: Translator, n_positions: int) -> np.ndarray:
    """(n_positions, d_model) position signal the model adds to its embeddings (fixed sinusoids or learned)."""
    c = translator.model.config
    n = max(1, min(n_positions, c.max_positions))
    if c.positional == "learned":
        return translator.model.src_pos.table[:n].detach().float().cpu().numpy()
    return sinusoidal_table(n, c.d_model).numpy()


def why_not_comparable(a: Translator, b: Translator) -> str:
    """Why B's maps cannot be laid over A's ("" when they can): another vocabulary, or other layers or heads."""
    if a.tokenizer.proto() != b.tokenizer.proto():
        return (
            "the two models split text with different vocabularies, so their rows and columns are not the same tokens"
        )
    shape = [(m.config.n_encoder_layers, m.config.n_decoder_layers, m.config.n_heads) for m in (a.model, b.model)]
    if shape[0] != shape[1]:
        (ea, da, ha), (eb, db, hb) = shape
        return (
            f"A has {ea} + {da} layers of {ha} heads and B {eb} + {db} of {hb}: a layer or head of one is not one of "
            "the other"
        )
    return ""


@dataclass(frozen=True)
class Comparison:
    """A's maps of its translation, and B's maps of the same tokens (None, with ``why_not``, when they differ)."""

    a: SentenceMaps
    b: SentenceMaps | None
    why_not: str = ""

    def views(self, kind: Kind, words: bool) -> tuple[MapView, MapView, MapView]:
        """(A, B, B − A) of one kind, all layers and heads, at subword or word level."""
        if self.b is None:
            raise ValueError(f"no difference: {self.why_not}")
        va, vb = map_view(self.a, kind, words), map_view(self.b, kind, words)
        return va, vb, replace(va, weights=vb.weights - va.weights)

    def layer_changes(self) -> dict[Kind, list[float]]:
        """Per kind, per layer: the mean over heads and rows of the total variation distance ½ Σ |B − A| between
        two rows: 0, the same weights; 1, no key in common."""
        if self.b is None:
            return {}
        return {
            kind: (0.5 * np.abs(self.b.weights(kind) - self.a.weights(kind)).sum(axis=-1)).mean(axis=(1, 2)).tolist()
            for kind in KINDS
        }


def compare(a: Translator, b: Translator, a_maps: SentenceMaps, src_ids: list[int], tokens: list[int]) -> Comparison:
    """B on A's source ids and output tokens, beside A's own maps of them (``a_maps``: ``maps_of(a, …)``)."""
    why = why_not_comparable(a, b)
    return Comparison(a_maps, None if why else maps_of(b, src_ids, tokens), why)
