"""Find the bad translations (NMTVis's document view): a text's lines translated and ranked, least confident first.

- confidence: the best hypothesis's mean log-probability per output token (EOS included); under the name guard, the
  worse of the line as read and as typed, so that the ranking ranks the model (random letters the guard reads as
  "Tom." are copied with confidence; the model alone is lost on them);
- low coverage (NMTVis's "might not be translated"): the share of source words whose cross-attention summed over the
  whole output (last decoder layer, mean of heads, subwords joined) is below ``THRESHOLD``;
- chrF against the line's reference, if it has one.
None of them proves a translation wrong: a confident output can be wrong, and attention is not explanation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sacrebleu

from data.readers import CorpusError, read_tsv
from lab.attention.sentence_maps import SentenceMaps
from lab.attention.translate_with_maps import maps_of, without_guard
from lab.attention.words import merge_columns, word_groups, word_labels
from model.run_dir import split_file
from translate.translator import DecodeOptions, Translation, Translator

MAX_LINES = 500  # lines ranked at once: about 6 s on one CPU thread with the shipped model (docs/views.md)
MAX_BYTES = 256_000  # an uploaded file's size: 500 lines of 500 characters
BATCH = 32  # lines per call to translate_all: the progress bar moves once per batch
THRESHOLD = 0.3  # units of one output subword's attention (each output row spends 1 over the source)
MAX_WORK = 8_000  # source subwords × beam size ranked at once: 500 dev lines greedy, ~7 s on one thread (docs/views.md)


class LinesError(ValueError):
    """Input that cannot be ranked; the message names the input, the line and what was expected."""


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line of the input it was read from
    source: str
    reference: str | None  # None: the line had no <TAB>reference


@dataclass(frozen=True)
class Ranked:
    line: Line
    translation: str  # as the page gives it: under the guard when it is on, its names put back
    confidence: float  # mean log-probability per output token (nats, <= 0); the worse of as read and as typed
    read_as: str  # what the model read under the guard ("": the line as typed)
    low_coverage: float  # share of source words below the coverage threshold (0..1)
    chrf: float | None  # sentence chrF (0..100), None without a reference
    cut: bool  # the input or the output was cut at a length limit


def read_lines(text: str, name: str) -> list[Line]:
    """Non-blank lines of ``text``, each ``source`` or ``source<TAB>reference``; at most MAX_LINES."""
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        fields = raw.split("\t")
        if len(fields) > 2 or not fields[0].strip():
            raise LinesError(f"{name}:{number}: expected a sentence or sentence<TAB>reference, got {raw[:60]!r}")
        lines.append(Line(number, fields[0].strip(), fields[1].strip() if len(fields) == 2 else None))
    if len(lines) > MAX_LINES:
        raise LinesError(f"{name}: {len(lines)} lines; at most {MAX_LINES} are ranked here (split the text)")
    return lines


def read_upload(data: bytes, name: str) -> list[Line]:
    """An uploaded UTF-8 file of at most MAX_BYTES, read as ``read_lines``."""
    if len(data) > MAX_BYTES:
        raise LinesError(f"{name}: {len(data):,} bytes; at most {MAX_BYTES:,} are read here")
    try:
        return read_lines(data.decode("utf-8-sig"), name)
    except UnicodeDecodeError as err:
        raise LinesError(f"{name}: not UTF-8 text (byte {err.start})") from None


def has_dev_split(model_dir: Path) -> bool:
    return split_file(model_dir, "dev").is_file()


def dev_lines(model_dir: Path) -> tuple[list[Line], int] | None:
    """The first MAX_LINES pairs of a run's ``splits/dev.tsv`` and how many it has; None when it has none."""
    if not has_dev_split(model_dir):
        return None
    try:
        pairs = read_tsv(split_file(model_dir, "dev"))
    except CorpusError as err:
        raise LinesError(str(err)) from None
    return [Line(i, p.src, p.tgt) for i, p in enumerate(pairs[:MAX_LINES], 1)], len(pairs)


def mean_log_prob(translation: Translation) -> float:
    """The best hypothesis's log-probability per token, EOS included (length-fair, unlike the sum)."""
    return translation.best.log_prob / max(1, len(translation.best.tokens))


def word_totals(maps: SentenceMaps, layer: int) -> tuple[list[str], np.ndarray]:
    """Every real source word and its cross-attention summed over the output rows (``layer``, mean of heads)."""
    groups = word_groups(maps.src, maps.src_special)
    totals = merge_columns(maps.cross[layer].mean(axis=0), groups).sum(axis=0)
    kept = [i for i, group in enumerate(groups) if not all(maps.src_special[j] for j in group)]
    labels = word_labels(maps.src, groups)
    return [labels[i] for i in kept], np.asarray(totals)[kept]


def low_coverage(translator: Translator, translation: Translation) -> float:
    """Share of the source words whose summed cross-attention (last layer) is below ``THRESHOLD``."""
    maps = maps_of(translator, translation.src_ids, translation.best.tokens)
    _, totals = word_totals(maps, maps.n_layers("cross") - 1)
    return float((totals < THRESHOLD).mean()) if len(totals) else 0.0


def sentence_chrf(hypothesis: str, reference: str | None) -> float | None:
    """sacrebleu's sentence chrF (0..100) with ``training/evaluate``'s metric; None without a reference."""
    if reference is None:
        return None
    return float(sacrebleu.metrics.CHRF().sentence_score(hypothesis, [reference]).score)


def rank(
    translator: Translator,
    lines: list[Line],
    options: DecodeOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Ranked]:
    """Every line translated whole and scored, least confident first; ``progress(lines done)`` after each batch.
    Refused before any decoding above MAX_WORK (a line the guard changed is decoded twice: at most twice that work)."""
    options = options or DecodeOptions()
    subwords = sum(len(translator.tokenizer.encode_src(line.source)) for line in lines)
    if subwords * options.beam_size > MAX_WORK:
        raise LinesError(
            f"{len(lines)} lines of {subwords:,} subwords in all, at beam size {options.beam_size}: at most "
            f"{MAX_WORK:,} subwords × beam size are ranked at once (fewer or shorter lines, or greedy search)"
        )
    out = []
    for start in range(0, len(lines), BATCH):
        chunk = lines[start : start + BATCH]
        results = translator.translate_all([line.source for line in chunk], options, batch_size=BATCH)
        typed = without_guard(translator, [line.source for line in chunk], results, options, BATCH)
        for line, result, alone in zip(chunk, results, typed, strict=True):
            cut = result.truncated or result.best.truncated
            chrf = sentence_chrf(result.text, line.reference)
            confidence = min(mean_log_prob(result), mean_log_prob(alone))
            read_as = result.guarded.read_as if result.guarded is not None else ""
            out.append(Ranked(line, result.text, confidence, read_as, low_coverage(translator, result), chrf, cut))
        if progress is not None:
            progress(len(out))
    return sorted(out, key=lambda r: r.confidence)


def corpus_scores(ranked: list[Ranked]) -> dict[str, float] | None:
    """Corpus BLEU and chrF of the lines with a reference, as ``training/evaluate`` computes them; None if none has."""
    scored = [r for r in ranked if r.line.reference is not None]
    if not scored:
        return None
    hyps, refs = [r.translation for r in scored], [[r.line.reference for r in scored]]
    bleu, chrf = sacrebleu.metrics.BLEU().corpus_score(hyps, refs), sacrebleu.metrics.CHRF().corpus_score(hyps, refs)
    return {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2), "sentences": len(scored)}
