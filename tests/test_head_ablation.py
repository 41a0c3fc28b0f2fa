"""The head scan on the shipped model: it covers every head, and docs/what-if.md states the count its config gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lab.whatif.head_ablation import MAX_SCANNED, all_heads
from translate.translator import DEFAULT_MODEL, Translator

DOC = Path(__file__).resolve().parent.parent / "docs" / "what-if.md"


def test_the_scan_covers_every_head_and_the_doc_states_the_count_of_the_config() -> None:
    config = json.loads((DEFAULT_MODEL / "config.json").read_text(encoding="utf-8"))
    count = config["n_heads"] * (config["n_encoder_layers"] + 2 * config["n_decoder_layers"])  # self, masked, cross
    assert len(all_heads(Translator.load(DEFAULT_MODEL).model)) == count <= MAX_SCANNED
    doc = " ".join(DOC.read_text(encoding="utf-8").split())  # the text, its line breaks read as spaces
    stated = re.search(r"all (\d+) heads \(n_heads × \(n_encoder_layers \+ 2 × n_decoder_layers\)", doc)
    assert stated is not None, "docs/what-if.md: the head count sentence is missing"
    assert int(stated.group(1)) == count
    parts = f"{config['n_heads']} × ({config['n_encoder_layers']} + 2 × {config['n_decoder_layers']})"
    assert parts in doc
