"""Attention being learned: at each dev evaluation the run records every attention map of a few fixed probe
sentences (the first short dev pairs, teacher-forced on their reference) into ``probes/`` of the run folder, so
that the Train page can show the cross-attention go from a blur to an alignment, step by step.

Bounded by the constants below, in float16 (evaluations past ``MAX_PROBE_STEPS`` are not recorded). Recording runs in
eval mode under inference mode and draws no random numbers: training continues exactly as without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from data.batch import Example
from data.tokenizer import Tokenizer
from model.attention_maps import KINDS, inspect
from model.run_dir import PROBES_DIR
from model.transformer import Transformer

PROBE_TOKENS_FILE = "tokens.json"
PROBE_SENTENCES = 3
MAX_PROBE_TOKENS = 24  # pieces a side, </s> included
MAX_PROBE_STEPS = 200


def probe_examples(dev: list[Example]) -> list[Example]:
    """The first dev examples short enough on both sides (the same ones at every evaluation, and after resume)."""
    short = [e for e in dev if len(e.src) <= MAX_PROBE_TOKENS and len(e.tgt) <= MAX_PROBE_TOKENS]
    return short[:PROBE_SENTENCES]


def record_probes(model: Transformer, tokenizer: Tokenizer, probes: list[Example], run_dir: Path, step: int) -> None:
    """Write every map of each probe at ``step`` (and, once, their token labels); nothing past the bound."""
    folder = Path(run_dir) / PROBES_DIR
    folder.mkdir(exist_ok=True)
    if not probes or len(list(folder.glob("step-*.npz"))) >= MAX_PROBE_STEPS:
        return
    arrays = {}
    for i, e in enumerate(probes):
        maps = inspect(model, e.src, e.tgt)
        for kind in KINDS:
            arrays[f"{kind}_{i}"] = getattr(maps, kind).numpy().astype(np.float16)  # (L, H, rows, cols)
    np.savez_compressed(folder / f"step-{step:08d}.npz", **arrays)
    labels = folder / PROBE_TOKENS_FILE
    if not labels.exists():
        rows = [
            {
                "src": tokenizer.src_pieces(e.src),
                "tgt_in": tokenizer.tgt_pieces([model.config.bos_id] + e.tgt[:-1]),
                "tgt_out": tokenizer.tgt_pieces(e.tgt),
            }
            for e in probes
        ]
        labels.write_text(json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")
