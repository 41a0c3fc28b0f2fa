"""How sure the model was of each word of its translation, read from the translation's record, and how often words
that sure were wrong on the model's dev split (``python -m workshop bench word_confidence --write``).

A word's probability is its least sure piece's: ``exp`` of the smallest of its tokens' log-probabilities, as the
search recorded them (``model.decode.Hypothesis.token_log_probs``). A word the name guard put back is the guard's,
not the model's choice: it is marked so, never shaded. "Wrong" on dev means: the word (lowercased, its punctuation
stripped) is not among the reference translation's words — a bag of words, so a right word in another place counts
as right, and a synonym of the reference's as wrong.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from data.tokenizer import Tokenizer
from lab.attention.words import word_groups, word_labels
from model.bounded_read import read_json
from model.decode import Hypothesis
from model.run_dir import WORD_CONFIDENCE_FILE
from translate.name_guard import Guarded, whole_tokens

EDGES = (
    0.5,
    0.75,
    0.9,
)  # the shades' lower edges, palest first: p < 0.5, 0.5–0.75, 0.75–0.9, ≥ 0.9 (label smoothing: rarely > 0.95)


@dataclass(frozen=True)
class OutputWord:
    text: str  # as the translation shows it (a stand-in put back: the original)
    positions: tuple[int, ...]  # its tokens' positions in the output
    prob: float  # its least sure piece's probability
    stand_in: str = ""  # the stand-in the model wrote here, when the name guard put the original back

    @property
    def shade(self) -> int:
        """0 (palest: least sure) … len(EDGES) (darkest)."""
        return sum(self.prob >= edge for edge in EDGES)


@dataclass(frozen=True)
class Band:
    shade: int  # as OutputWord.shade
    words: int  # dev words of this shade
    wrong: int  # of them, not among their reference's words


@dataclass(frozen=True)
class Calibration:
    bands: tuple[Band, ...]  # one per shade, palest first
    measured: str  # on what: "2,000 dev translations of checkpoints/es-en, greedy, name guard on"

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def output_words(tokenizer: Tokenizer, hypothesis: Hypothesis, guarded: Guarded | None = None) -> list[OutputWord]:
    """The words of ``hypothesis`` (EOS left out), each with its least sure piece's probability; under the guard,
    a stand-in put back as its original and marked as the guard's."""
    pieces = tokenizer.tgt_pieces(hypothesis.tokens)
    special = [i == tokenizer.tgt.eos_id() for i in hypothesis.tokens]
    groups = [g for g in word_groups(pieces, special) if not special[g[0]]]
    back = guarded.originals if guarded is not None and guarded.swaps else {}
    pattern = whole_tokens(frozenset(back)) if back else None
    words = []
    for group, label in zip(groups, word_labels(pieces, groups), strict=True):
        prob = math.exp(min(hypothesis.token_log_probs[i] for i in group)) if hypothesis.token_log_probs else math.nan
        found = pattern.search(label) if pattern else None
        text = pattern.sub(lambda m: back[m.group()], label) if found and pattern else label
        words.append(OutputWord(text, tuple(group), prob, found.group() if found else ""))
    return words


def load_calibration(model_dir: Path) -> Calibration | None:
    """The model's WORD_CONFIDENCE_FILE, or None when it has none (or one that cannot be read)."""
    try:
        data = read_json(Path(model_dir) / WORD_CONFIDENCE_FILE, ValueError)
        bands = tuple(Band(int(b["shade"]), int(b["words"]), int(b["wrong"])) for b in data["bands"])
        if [b.shade for b in bands] != list(range(len(EDGES) + 1)):
            return None
        return Calibration(bands, str(data["measured"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
