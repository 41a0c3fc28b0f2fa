"""The gold-aligned sentences the app offers: a few short dev pairs, read at run time from outside the repository.

The gold data (XL-WA, CC BY-NC-SA) is never copied into the repository: ``$LAB_GOLD_ALIGNMENTS`` names the file,
by default XL-WA's English–Spanish dev set in ``../shared/data`` beside the repository. Point it at dev, never at
test: test is for reporting (``workshop.bench.alignment``), not for looking at while choosing a layer and head.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.alignment.scoring import GoldPair, detokenize
from lab.page.direction import Languages
from translate.settings import REPO_ROOT, SHARED_DATA

GOLD_ENV = "LAB_GOLD_ALIGNMENTS"
DEFAULT_GOLD = SHARED_DATA / "xl-wa-es" / "dev.tsv"
OFFERED = 25  # the shortest pairs, by source tokens: a small list of sentences short enough to read at a glance
GOLD_DIRECTION = ("es", "en")  # XL-WA's pairs as read for Spanish → English; English → Spanish reads them reversed


def fits(langs: Languages) -> bool:
    """Whether the gold sentences suit a model of this direction, either way round (or of no named direction)."""
    return not langs.known or langs.pair in (GOLD_DIRECTION, GOLD_DIRECTION[::-1])


def reversed_gold(langs: Languages) -> bool:
    """Whether a model of ``langs`` reads the gold file the other way round (English in, Spanish out)."""
    return langs.known and langs.pair == GOLD_DIRECTION[::-1]


def gold_path(environ: Mapping[str, str] = os.environ) -> Path:
    """``$LAB_GOLD_ALIGNMENTS`` (``~`` expanded, relative to the repository root) when set, else XL-WA dev."""
    value = environ.get(GOLD_ENV, "").strip()
    return (REPO_ROOT / Path(value).expanduser() if value else DEFAULT_GOLD).resolve()


def offered(pairs: Sequence[GoldPair], n: int = OFFERED) -> list[int]:
    """Indices of the ``n`` pairs with the fewest source tokens (the earlier on ties), in file order."""
    shortest = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].source), i))[:n]
    return sorted(shortest)


def source_text(pair: GoldPair) -> str:
    """The source side as running text, as it goes into the text box (and, detokenised alike, into the bench)."""
    return detokenize(pair.source)[0]


def pair_for(pairs: Sequence[GoldPair], text: str) -> GoldPair | None:
    """The gold pair whose source side is ``text`` (surrounding spaces aside), or None."""
    text = text.strip()
    return next((p for p in pairs if source_text(p) == text), None)
