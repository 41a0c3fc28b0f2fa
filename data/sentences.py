"""Sentences of a text: where a sentence ends, and where a period does not end one ("Sr.", "Mr.").

Used on what the user types (lab.sentences cuts long inputs) and on training pairs (data.corpus.sentence_pairs).
"""

from __future__ import annotations

import re

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
