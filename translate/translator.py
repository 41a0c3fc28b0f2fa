"""Translator: text in -> tokens + translation (+ attention maps)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

from data.batch import truncate
from data.sentences import MAX_PIECE, pieces
from data.tokenizer import Tokenizer
from model.attention_maps import AttentionMaps, inspect
from model.decode import Hypothesis, beam_search, greedy
from model.run_dir import NAME_GUARD_FILE
from model.transformer import Transformer
from translate.model_dir import load_model
from translate.name_guard import Guarded, NameGuard, marked, unmarked
from translate.settings import REPO_ROOT
from translate.source_language import is_source_language, looks_like

DEFAULT_MODEL = REPO_ROOT / "checkpoints" / "es-en"
GUARD_ATTEMPTS = 3  # stand-in sets tried before a sentence is translated as typed
RETRIED_SWAPS = 4  # more swaps, no second try: the shipped model failed 19 such once, another set saved 1
UNRESTORED = "of the n best left out: their stand-ins did not come back exactly once each"
KEEP_HELP = "Wrap words in [[ ]] to keep them as typed (under the name guard)."


@dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 1.0
    n_best: int = 1
    max_len_a: float = 1.5
    max_len_b: int = 10
    name_guard: bool = True  # names, places and numbers read as stand-ins and put back (translate/name_guard.py)
    marks: bool = False  # what a user typed (the page, the CLI): spans wrapped in [[ ]] kept as typed


@dataclass(frozen=True)
class Candidate(Hypothesis):
    """One output of the n-best list: the decoder's Hypothesis and its detokenized text."""

    text: str = field(kw_only=True)


@dataclass(frozen=True)
class Translation:
    """One sentence (or piece of a text) and its n-best list."""

    source: str
    src_ids: list[int]  # x1 … xS </s>
    truncated: bool  # the source was longer than the model accepts and was cut
    candidates: list[Candidate]  # best first
    guarded: Guarded | None = None  # what the model read under the name guard, when it swapped something
    guard_note: str = ""  # why the guard gave up on this sentence and it was translated as typed
    unrestored: int = 0  # n-best candidates left out: the guard could not put their originals back

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    @property
    def text(self) -> str:
        return self.best.text

    @property
    def not_kept(self) -> list[str]:
        """The spans marked [[ ]] in the source that the translation does not hold as typed."""
        kept = {s.original for s in self.guarded.swaps if s.kept} if self.guarded else set()
        return [span for span in marked(self.source) if span not in kept]


class Translator:
    """A loaded model and its tokenizer; stateless after construction, safe to share between sessions."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, guard: NameGuard | None = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.guard = guard  # None: this model has no name guard (no name_guard.json beside its weights)
        self.device = next(model.parameters()).device

    @classmethod
    def load(cls, directory: Path = DEFAULT_MODEL, device: str = "cpu") -> Translator:
        loaded = load_model(directory, device)
        return cls(loaded.model, loaded.tokenizer, load_guard(Path(directory)))

    @property
    def max_src_len(self) -> int:
        return self.model.config.max_positions

    def pieces(self, text: str) -> list[str]:
        """What to translate for ``text``: whole when it is short, else sentence by sentence, each within
        ``MAX_PIECE`` subwords (data/sentences.py), never cut at the model's maximum length."""
        limit = min(self.max_src_len, MAX_PIECE)
        return pieces(text, lambda t: len(self.tokenizer.encode_src(t)), limit) or [text]

    def encode(self, text: str) -> tuple[list[int], bool]:
        """Source ids (EOS last), cut to the model's maximum length; second value says whether it was cut."""
        ids = self.tokenizer.encode_src(text)
        return truncate(ids, self.max_src_len), len(ids) > self.max_src_len

    def translate_batch(self, texts: list[str], options: DecodeOptions = DecodeOptions()) -> list[Translation]:
        """Translate several sentences at once, under the name guard when the model has one and ``options`` ask:
        a sentence whose stand-ins do not come back exactly once each is tried again with other stand-ins, when
        it reads differently and has few of them, then translated again as typed. A sentence that is not in the
        model's source language (translate/source_language.py) is not guarded: its names are not the guard's to read.
        A span marked [[ ]] is kept as typed, in any language (NameGuard.protect); marks that do not pair: MarkError."""
        plain = [unmarked(t)[0] for t in texts] if options.marks else texts  # [[ ]] unpaired: MarkError, first
        if self.guard is None or not options.name_guard:
            off = "this model has none" if self.guard is None else "switched off"
            out = self.decode_batch(plain, options)
            note = f"[[ ]] not kept: keeping words as typed needs the name guard ({off})"
            return [replace(r, source=t, guard_note=note * (t != p)) for r, t, p in zip(out, texts, plain, strict=True)]
        out: list[Translation | None] = [None] * len(texts)
        other = {i: foreign(t, self.guard.lang) for i, t in enumerate(plain) if not is_source_language(t, self.guard)}
        todo, read, why = list(range(len(texts))), {i: set() for i in range(len(texts))}, dict(other)
        for attempt in range(GUARD_ATTEMPTS):  # each try with other stand-ins, for the sentences still failing
            guarded = {i: self.guard.protect(texts[i], attempt, i not in other, options.marks) for i in todo}
            todo = [i for i in todo if guarded[i].read_as not in read[i]]  # read as before, it fails as before
            again = []
            for i, result in zip(todo, self.decode_batch([guarded[i].read_as for i in todo], options), strict=True):
                read[i].add(guarded[i].read_as)
                out[i], why[i] = guarded_result(guarded[i], result)
                if out[i] is None and len(guarded[i].swaps) <= RETRIED_SWAPS:
                    again.append(i)
            todo = again
            if not todo:
                break
        failed = [i for i, r in enumerate(out) if r is None and i not in other and options.marks and marked(texts[i])]
        guarded = {i: self.guard.protect(texts[i], 0, False, True) for i in failed}  # what the user marked, alone
        for i, result in zip(failed, self.decode_batch([guarded[i].read_as for i in failed], options), strict=True):
            if (kept := guarded_result(guarded[i], result)[0]) is not None:
                out[i] = replace(kept, guard_note=f"name guard off for this sentence but for [[ ]]: {why[i]}")
        todo = [i for i, result in enumerate(out) if result is None]
        for i, result in zip(todo, self.decode_batch([plain[i] for i in todo], options), strict=True):
            out[i] = replace(result, source=texts[i], guard_note=f"name guard off for this sentence: {why[i]}")
        for i in other.keys() - set(todo):  # in another language: only what was marked [[ ]] was guarded
            out[i] = replace(out[i], guard_note=f"name guard off for this sentence: {other[i]}")
        return out  # type: ignore[return-value]

    def decode_batch(self, texts: list[str], options: DecodeOptions = DecodeOptions()) -> list[Translation]:
        """Translate several sentences at once (padded into one batch), as typed: the engine's own work."""
        if not texts:
            return []
        encoded = [self.encode(t) for t in texts]
        rows = [torch.tensor(ids) for ids, _ in encoded]
        src = pad_sequence(rows, batch_first=True, padding_value=self.model.config.pad_id).to(self.device)  # (B, S)
        o = options
        if o.beam_size <= 1:
            nbest = [[h] for h in greedy(self.model, src, o.max_len_a, o.max_len_b)]
        else:
            nbest = beam_search(self.model, src, o.beam_size, o.length_penalty, o.n_best, o.max_len_a, o.max_len_b)
        return [
            self._translation(text, ids, cut, hyps)
            for text, (ids, cut), hyps in zip(texts, encoded, nbest, strict=True)
        ]

    def _translation(self, text: str, src_ids: list[int], cut: bool, hypotheses: list[Hypothesis]) -> Translation:
        """The Translation of ``text`` from its source ids and the decoder's n-best list (best first)."""
        decode = self.tokenizer.decode_tgt
        return Translation(text, src_ids, cut, [Candidate(**vars(h), text=decode(h.tokens)) for h in hypotheses])

    def translate(self, text: str, options: DecodeOptions = DecodeOptions()) -> Translation:
        return self.translate_batch([text], options)[0]

    def attention(self, translation: Translation, hypothesis: int = 0) -> AttentionMaps:
        """Maps of one hypothesis from a forced pass over exactly that hypothesis (docs/attention-pitfalls.md §6)."""
        return inspect(self.model, translation.src_ids, translation.candidates[hypothesis].tokens)

    def translate_all(
        self, texts: list[str], options: DecodeOptions = DecodeOptions(), batch_size: int = 64, progress: bool = False
    ) -> list[Translation]:
        """Translate a long list in length-sorted batches; returns Translations in the input order."""
        from tqdm import tqdm

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[Translation | None] = [None] * len(texts)
        starts = range(0, len(order), batch_size)
        for start in tqdm(starts, desc="translating", unit="batch", disable=not progress):
            chunk = order[start : start + batch_size]
            for i, result in zip(chunk, self.translate_batch([texts[i] for i in chunk], options), strict=True):
                out[i] = result
        return out  # type: ignore[return-value]

    def translate_many(
        self, texts: list[str], options: DecodeOptions = DecodeOptions(), batch_size: int = 64, progress: bool = False
    ) -> list[str]:
        """Texts of ``translate_all``: the best hypothesis of each sentence, in the input order."""
        return [t.text for t in self.translate_all(texts, options, batch_size, progress)]


def guarded_result(guarded: Guarded, result: Translation) -> tuple[Translation | None, str]:
    """``result`` (the translation of ``guarded.read_as``) with the originals put back into every candidate, those
    that cannot take them left out; None and why when the best one cannot (a stand-in missing, repeated, invented)."""
    if not guarded.swaps:
        return result, ""
    restored = [(c, *guarded.restore(c.text)) for c in result.candidates]
    if restored[0][1] is None:
        return None, restored[0][2]
    kept = [replace(c, text=text) for c, text, _ in restored if text is not None]
    unrestored = len(restored) - len(kept)
    return replace(result, source=guarded.source, candidates=kept, guarded=guarded, unrestored=unrestored), ""


def foreign(text: str, lang: str) -> str:
    """Why the guard leaves ``text`` alone: it looks like another language than the model's source ``lang``."""
    code = looks_like(text)[0]
    return f"it looks like {code or 'another language'}, not {lang}, and its names are not the guard's to read"


def load_guard(directory: Path) -> NameGuard | None:
    """The name guard kept beside a model's weights, or None when it has none."""
    path = Path(directory) / NAME_GUARD_FILE
    return NameGuard.load(path) if os.path.lexists(path) else None  # a FIFO or a loop: refused, never skipped
