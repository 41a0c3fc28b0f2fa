"""A model's alignment bench result, stored in its directory: figures only, never a word of the gold data.

``python -m workshop bench alignment --save`` writes it; the alignment tab offers the best aligner's layer, head and
reading by default, and the words lit on hover follow the reading nearest people's links on dev.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lab.alignment.methods import Method
from model.run_dir import ALIGNMENT_FILE

APP_EXTRACTION = "argmax"  # what the app's alignment tab draws: each target word to the source word it attends to most
EFLOMAL = "eflomal"  # the ``baseline`` field of the bench's eflomal record


class AlignmentFileError(ValueError):
    """A stored alignment result that cannot be read; the message names the file."""


@dataclass(frozen=True)
class StoredAlignment:
    """The app's aligner at the layer, head and reading dev chose, its AER on the scored (test) set, eflomal's."""

    benchmark: str  # "XL-WA"
    best: Method
    aer: float
    eflomal_aer: float | None  # None when eflomal was not run
    nearest: Method  # the cross-attention reading with the lowest AER on dev, any extraction (the hover's)
    nearest_aer: float  # its AER on the scored (test) set


def default_reading(n_layers: int) -> Method:
    """The reading of a model without a stored result: the last layer's mean of heads, as the maps open."""
    return Method(APP_EXTRACTION, n_layers - 1, None, "predicts")


def load_alignment(model_dir: Path) -> StoredAlignment | None:
    """The stored result of ``model_dir``; None when it has none; AlignmentFileError when it is broken."""
    path = Path(model_dir) / ALIGNMENT_FILE
    if not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        records = payload["records"]
        best = next(
            r
            for r in records
            if r.get("chosen_on_dev") and r.get("extraction") == APP_EXTRACTION and "attribution" not in r
        )  # the app's extraction at its dev choice, read off the attention
        eflomal = next((r for r in records if r.get("baseline") == EFLOMAL), None)
        attention = [r for r in records if r.get("layer_index") is not None]  # attribution, baselines: no layer
        nearest = min(attention, key=lambda r: float(r["dev_aer"]))
        return StoredAlignment(
            str(payload["benchmark"]),
            Method.from_fields(best),
            float(best["aer"]),
            None if eflomal is None else float(eflomal["aer"]),
            Method.from_fields(nearest),
            float(nearest["aer"]),
        )
    except StopIteration:
        raise AlignmentFileError(f"{path}: no {APP_EXTRACTION} record chosen on dev") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise AlignmentFileError(f"{path}: unreadable ({type(err).__name__}: {err})") from None
