"""Translator: text in -> tokens + translation (+ attention maps), with the PyTorch engine (translate/ct2.py: the
CTranslate2 one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from data.batch import truncate
from data.sentences import MAX_PIECE, pieces
from data.tokenizer import Tokenizer
from model.attention_maps import AttentionMaps, inspect
from model.config import ConfigError
from model.decode import Hypothesis, beam_search, greedy
from model.ensemble import Ensemble
from model.transformer import Transformer
from model.weights import ModelLoadError
from translate.model_dir import load_model
from translate.settings import REPO_ROOT

DEFAULT_MODEL = REPO_ROOT / "checkpoints" / "es-en"


@dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 1.0
    n_best: int = 1
    max_len_a: float = 1.5
    max_len_b: int = 10


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

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    @property
    def text(self) -> str:
        return self.best.text


class Translator:
    """A loaded model and its tokenizer; stateless after construction, safe to share between sessions."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device

    @classmethod
    def load(cls, directory: Path = DEFAULT_MODEL, device: str = "cpu") -> Translator:
        loaded = load_model(directory, device)
        return cls(loaded.model, loaded.tokenizer)

    @classmethod
    def load_ensemble(cls, directories: list[Path], device: str = "cpu") -> Translator:
        """One model directory: that model; several: an ``Ensemble`` of them, which must share one tokenizer."""
        if len(directories) == 1:
            return cls.load(directories[0], device)
        loaded = [load_model(d, device) for d in directories]
        first = loaded[0].tokenizer
        for directory, other in zip(directories[1:], loaded[1:], strict=True):
            if other.tokenizer.proto() != first.proto():
                raise ModelLoadError(
                    f"{directory}: its tokenizer differs from {directories[0]}'s (an ensemble shares one)"
                )
        try:
            return cls(Ensemble([item.model for item in loaded]), first)
        except ConfigError as err:
            raise ModelLoadError(f"{', '.join(map(str, directories))}: {err}") from None

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
        """Translate several sentences at once (padded into one batch)."""
        encoded = [self.encode(t) for t in texts]
        pad = self.model.config.pad_id
        longest = max(len(ids) for ids, _ in encoded)
        src = torch.full((len(texts), longest), pad, dtype=torch.long)
        for row, (ids, _) in enumerate(encoded):
            src[row, : len(ids)] = torch.tensor(ids)
        src = src.to(self.device)
        if options.beam_size <= 1:
            nbest = [[h] for h in greedy(self.model, src, options.max_len_a, options.max_len_b)]
        else:
            nbest = beam_search(
                self.model,
                src,
                options.beam_size,
                options.length_penalty,
                options.n_best,
                options.max_len_a,
                options.max_len_b,
            )
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
        if isinstance(self.model, Ensemble):
            raise ValueError("an ensemble has no attention maps of its own: open one of its models")
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
