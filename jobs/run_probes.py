"""The probe sentences' attention a run recorded at each dev evaluation (training/probes.py), read for the page."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from model.attention_maps import KINDS
from model.bounded_read import read_json, regular_size
from training.probes import PROBE_TOKENS_FILE, PROBES_DIR

STEP_FILE = re.compile(r"step-(\d{8})\.npz")


def probe_steps(run_dir: Path) -> list[int]:
    """The steps whose probes were recorded, in order."""
    folder = run_dir / PROBES_DIR
    names = [p.name for p in folder.glob("step-*.npz")] if folder.is_dir() else []
    return sorted(int(m.group(1)) for name in names if (m := STEP_FILE.fullmatch(name)))


def probe_labels(run_dir: Path) -> list[dict[str, list[str]]]:
    """Per probe sentence: its source pieces, decoder input and output pieces; [] when missing or unreadable."""
    try:
        rows = read_json(run_dir / PROBES_DIR / PROBE_TOKENS_FILE, ValueError)
    except ValueError:
        return []
    keys = ("src", "tgt_in", "tgt_out")
    ok = isinstance(rows, list) and all(
        isinstance(r, dict) and all(isinstance(r.get(k), list) for k in keys) for r in rows
    )
    return rows if ok else []


def probe_map(run_dir: Path, step: int, sentence: int, kind: str) -> np.ndarray | None:
    """One recorded map (L, H, rows, cols) as float32; None when it is missing or unreadable."""
    if kind not in KINDS:
        return None
    path = run_dir / PROBES_DIR / f"step-{step:08d}.npz"
    try:
        regular_size(path, OSError)  # a FIFO there would block the page
        with np.load(path, allow_pickle=False) as data:
            weights = data[f"{kind}_{sentence}"].astype(np.float32)
    except (OSError, KeyError, ValueError):
        return None
    return weights if weights.ndim == 4 else None
