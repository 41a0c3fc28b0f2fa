"""docs/what-if.md's "Attribution as an alignment" quotes the shipped model's own bench figures (alignment.json)."""

from __future__ import annotations

import json
from pathlib import Path

from translate.translator import DEFAULT_MODEL

DOC = Path(__file__).resolve().parent.parent / "docs" / "what-if.md"


def _best(records: list[dict], prefix: str) -> dict:
    """The record of lowest dev AER among the methods whose name begins with ``prefix``."""
    found = [r for r in records if r["method"].startswith(prefix) and r.get("dev_aer") is not None]
    assert found, f"alignment.json: no method beginning {prefix!r}"
    return min(found, key=lambda r: r["dev_aer"])


def test_the_alignment_paragraph_quotes_the_shipped_models_figures() -> None:
    records = json.loads((DEFAULT_MODEL / "alignment.json").read_text(encoding="utf-8"))["records"]
    section = " ".join(DOC.read_text(encoding="utf-8").split("## Attribution as an alignment", 1)[1].split())
    attribution = _best(records, "attribution, input × gradient")
    assert f"test AER {attribution['aer']:.3f}** (precision {attribution['precision']:.3f}, recall" in section
    assert f"recall {attribution['recall']:.3f})" in section
    chosen_attention = [r for r in records if r.get("chosen_on_dev") and r["method"].startswith("layer")]
    attention = min(chosen_attention, key=lambda r: r["dev_aer"])  # chosen on dev, as the bench chooses
    assert f"cross-attention's best is {attention['aer']:.3f}" in section
    assert f"the diagonal {_best(records, 'diagonal')['aer']:.3f}" in section
    assert f"eflomal {_best(records, 'eflomal')['aer']:.3f}" in section
