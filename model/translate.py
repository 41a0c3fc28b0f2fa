"""Translator: text in -> tokens + translation (+ attention maps); and the ``python -m model.translate`` CLI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch

from data.sentences import MAX_PIECE, pieces
from model.config import ConfigError
from model.decode import Hypothesis, beam_search, greedy
from model.ensemble import Ensemble
from model.inspect import AttentionMaps, inspect
from model.io import ModelLoadError, load_model
from model.tokenizer import Tokenizer
from model.transformer import Transformer

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "checkpoints" / "es-en"
CHUNK_LINES = 2000  # standard input is read, translated and written this many lines at a time


@dataclass(frozen=True)
class DecodeOptions:
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 1.0
    n_best: int = 1
    max_len_a: float = 1.5
    max_len_b: int = 10


@dataclass(frozen=True)
class Translation:
    source: str
    src_ids: list[int]
    truncated: bool  # the source was longer than the model accepts and was cut
    hypotheses: list[Hypothesis]  # best first
    texts: list[str]  # detokenized hypotheses, same order

    @property
    def text(self) -> str:
        return self.texts[0]


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
        if len(ids) <= self.max_src_len:
            return ids, False
        return ids[: self.max_src_len - 1] + ids[-1:], True

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
            Translation(text, ids, cut, hyps, [self.tokenizer.decode_tgt(h.tokens) for h in hyps])
            for text, (ids, cut), hyps in zip(texts, encoded, nbest, strict=True)
        ]

    def translate(self, text: str, options: DecodeOptions = DecodeOptions()) -> Translation:
        return self.translate_batch([text], options)[0]

    def attention(self, translation: Translation, hypothesis: int = 0) -> AttentionMaps:
        """Maps of one hypothesis from a forced pass over exactly that hypothesis (docs/attention-pitfalls.md §6)."""
        if isinstance(self.model, Ensemble):
            raise ValueError("an ensemble has no attention maps of its own: open one of its models")
        return inspect(self.model, translation.src_ids, translation.hypotheses[hypothesis].tokens)

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


def main(argv: list[str] | None = None) -> int:
    from model.ct2 import add_engine_arguments, load_translator  # not at the top: model.ct2 builds on this module

    parser = argparse.ArgumentParser(
        prog="python -m model.translate",
        description="Translate with a model directory (the shipped one: Spanish to English). Standard input is "
        f"translated in batches of {CHUNK_LINES} lines sorted by length, one output line per input line, in order; "
        "a long line is translated sentence by sentence, as the app does.",
    )
    parser.add_argument("text", nargs="*", help="sentences to translate (default: read standard input line by line)")
    parser.add_argument(
        "--model",
        type=Path,
        action="append",
        help=f"model directory (default: {DEFAULT_MODEL}); repeat it to decode with an ensemble of models",
    )
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    parser.add_argument("--length-penalty", type=float, default=1.0)
    parser.add_argument("--n-best", type=int, default=1, help="print the n best hypotheses with scores")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences decoded at once")
    parser.add_argument("--device", default="cpu")
    add_engine_arguments(parser)
    args = parser.parse_args(argv)
    try:
        translator = load_translator(args.model or [DEFAULT_MODEL], args.device, args.engine, args.ct2_model)
    except ModelLoadError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    options = DecodeOptions(max(1, args.beam), args.length_penalty, max(1, min(args.n_best, args.beam)))
    lines = args.text or (line.rstrip("\n") for line in sys.stdin)
    number = 0
    for chunk in _chunks(lines, CHUNK_LINES):
        for line, results in zip(chunk, translate_lines(translator, chunk, options, args.batch_size), strict=True):
            number += 1
            _warn(translator, number, line, results)
            if options.n_best > 1 and results:
                for text, hyp in zip(results[0].texts, results[0].hypotheses, strict=True):
                    print(f"{hyp.score:.4f}\t{hyp.log_prob:.4f}\t{text}")
            else:
                print(" ".join(r.text for r in results))
        sys.stdout.flush()
    return 0


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(lines)
    while chunk := list(islice(iterator, size)):
        yield chunk


def translate_lines(
    translator: Translator, lines: list[str], options: DecodeOptions, batch_size: int = 64
) -> list[list[Translation]]:
    """Each line's translations, in order: one per piece (``Translator.pieces``; an n-best list keeps the line
    whole), none for a blank line. All pieces of all lines are decoded together, in length-sorted batches."""
    split = [[] if not line.strip() else [line] if options.n_best > 1 else translator.pieces(line) for line in lines]
    flat = translator.translate_all([p for parts in split for p in parts], options, batch_size)
    out, start = [], 0
    for parts in split:
        out.append(flat[start : start + len(parts)])
        start += len(parts)
    return out


def _warn(translator: Translator, number: int, line: str, results: list[Translation]) -> None:
    """Notes on standard error for input line ``number``: characters left out, a source or an output cut short."""
    where = f"line {number}: "
    left_out = translator.tokenizer.src_reading(line).left_out if results else ()
    if left_out:
        print(f"note: {where}left out, not in the model's vocabulary: {' '.join(left_out)}", file=sys.stderr)
    if any(r.truncated for r in results):
        print(f"warning: {where}input cut to {translator.max_src_len} subwords", file=sys.stderr)
    if any(r.hypotheses[0].truncated for r in results):
        print(f"warning: {where}output cut at the length limit (the model had not finished)", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
