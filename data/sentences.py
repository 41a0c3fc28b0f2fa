"""Sentences of a text: where a sentence ends, and where a period does not end one ("Sr.", "Mr."); and long
inputs cut into pieces the model can translate: sentences, then clause or word runs when a sentence is too long.

A translation model sees a bounded number of positions and was trained on single sentences. Cutting a long input
at that bound translates a fragment of nothing in particular; splitting it where the text itself pauses does not.
Used on what the user types (the app and ``python -m translate``) and on training pairs (data.corpus.sentence_pairs).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A title or reference: its period ends no sentence (Spanish titles, and English ones for training pairs).
ABBREVIATIONS = ("sr", "sra", "srta", "dr", "dra", "ud", "uds", "pág", "núm", "av", "mr", "mrs", "ms", "st", "jr")
CLOSERS = "\"'»”’)]"  # may follow the final punctuation and still belong to the sentence
# A sentence ends at . ! ? … (closing quotes or brackets may follow) before a space and a word, or at a line break.
SENTENCE_END = re.compile(rf"(?<=[.!?…])[{re.escape(CLOSERS)}]*(?P<gap>\s+)(?=[\"'«“¿¡(\[\w])|\s*\n\s*")


def _abbreviation_before(text: str, end: int) -> bool:
    """True when the period just before ``end`` closes a title or reference ("Sr.", "pág."), not a sentence."""
    words = text[:end].rstrip(CLOSERS).rstrip(".").rsplit(None, 1)
    return bool(words) and words[-1].lower().lstrip("(¿¡\"'«“") in ABBREVIATIONS


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped, none empty (line breaks always end a sentence)."""
    out, start = [], 0
    for match in SENTENCE_END.finditer(text):
        end = match.start("gap") if match.group("gap") is not None else match.start()
        if "\n" not in match.group() and _abbreviation_before(text, end):
            continue
        out.append(text[start:end])
        start = match.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


# ----------------------------------------------------------------------------------------- long inputs

LONG_INPUT = 64  # subwords: a longer input of several sentences is translated sentence by sentence
# Subwords per piece (EOS included): within what the model learned (Tatoeba's training sentences: median 9, 99.9 % up
# to 32, longest 75) and maps that stay readable and cheap to draw. Longer pieces make the model loop on
# run-on text without punctuation and the page slow (workshop.bench.app_latency; figures in docs/results.md).
MAX_PIECE = 40
CLAUSE_END = re.compile(r"(?<=[,;:])\s+")
SPACE = re.compile(r"\s+")

Count = Callable[[str], int]  # subwords of a text as the model would see it (EOS included)


def fit(
    text: str, count: Count, limit: int, boundaries: tuple[re.Pattern[str], ...] = (CLAUSE_END, SPACE)
) -> list[str]:
    """``text`` as consecutive runs of at most ``limit`` subwords, cut at the first kind of boundary that works, packed
    greedily (as many clauses, then words, as fit); a single word longer than the limit is halved, the last resort."""
    text = text.strip()
    if not text or count(text) <= limit:
        return [text] if text else []
    if len(text) == 1:
        return [text]  # nothing left to cut (a limit below one character's subwords)
    if not boundaries:
        middle = len(text) // 2
        return fit(text[:middle], count, limit, ()) + fit(text[middle:], count, limit, ())
    boundary, rest = boundaries[0], boundaries[1:]
    parts = [p for p in boundary.split(text) if p.strip()]  # the separators dropped
    if len(parts) == 1:
        return fit(text, count, limit, rest)
    runs: list[str] = []
    current = ""
    for part in parts:
        joined = f"{current} {part}" if current else part
        if current and count(joined) > limit:
            runs.append(current)
            current = part
        else:
            current = joined
    runs.append(current)
    return [piece for run in runs for piece in fit(run, count, limit, rest)]


def pieces(text: str, count: Count, limit: int, long_input: int = LONG_INPUT) -> list[str]:
    """What to translate: ``text`` whole when it is short and fits, else its sentences, each within ``limit``."""
    text = text.strip()
    if not text:
        return []
    if count(text) <= min(limit, long_input):
        return [text]
    return [piece for sentence in sentences(text) for piece in fit(sentence, count, limit)]
