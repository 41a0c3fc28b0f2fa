"""Which language each side of a corpus is in, proposed from the text itself before the user confirms it: by
langid.py (Lui & Baldwin 2012: offline, 97 languages, milliseconds on the page's sample of pairs). The proposal only
fills the pickers and warns when the columns look the other way round; the user's pick is what the run trains on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from data.languages import name_of
from translate.source_language import identifier

MIN_CONFIDENCE = 0.8  # below this a proposal fills nothing and warns about nothing
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})?")  # ISO 639-1/-3, with an optional region: "pt-BR"


def _ranked(text: str) -> list[tuple[str, float]]:
    """(language, probability) best first; empty for text without letters."""
    return identifier().rank(text)[:3] if any(ch.isalpha() for ch in text) else []


def propose_columns(samples: Sequence[tuple[str, str]]) -> tuple[str, str, float]:
    """(source language, target language, confidence 0–1) of sample pairs, each side read as one text; always two
    different languages (a side's second guess when both first guesses agree); ("", "", 0.0) for a side without text."""
    src = _ranked("\n".join(pair[0] for pair in samples))
    tgt = _ranked("\n".join(pair[1] for pair in samples))
    if not src or not tgt:
        return "", "", 0.0
    pairs = [(s, t, ps * pt) for s, ps in src for t, pt in tgt if s != t]
    best_src, best_tgt, _ = max(pairs, key=lambda item: item[2])
    confidence = min(dict(src)[best_src], dict(tgt)[best_tgt])
    return best_src, best_tgt, round(confidence, 3)


def language_warning(picked: tuple[str, str], proposed: tuple[str, str, float]) -> str | None:
    """One plain line when the text reads as the picked languages swapped, or as another language; else None."""
    src, tgt, confidence = proposed
    picked = (_base(picked[0]), _base(picked[1]))  # "pt-BR" reads as "pt"
    if confidence < MIN_CONFIDENCE or (src, tgt) == picked:
        return None
    if (src, tgt) == (picked[1], picked[0]):
        return (
            f"The source column reads like {name_of(src)} and the target column like {name_of(tgt)}: the columns "
            "look swapped. Swap them, or the model learns the other direction."
        )
    side, read, chosen = ("source", src, picked[0]) if src != picked[0] else ("target", tgt, picked[1])
    return f"The {side} column reads like {name_of(read)}, not {name_of(chosen)}: check the columns and languages."


def _base(code: str) -> str:
    return code.strip().lower().split("-")[0]


def code_problem(code: str) -> str | None:
    """Why ``code`` is no ISO language code ("es", "pt-BR", "ast"); None when it is one."""
    if LANGUAGE_CODE.fullmatch(code.strip()):
        return None
    return f"language code {code.strip()!r}: expected an ISO code of 2–3 lowercase letters, e.g. 'es' or 'pt-BR'"
