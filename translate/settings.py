"""Where the lab finds things on this machine, the one home of the repository's paths and of ``LAB_RUNS_DIR``
(``model/``, the network only, reads none): the repository, the team's shared data and the runs folder; how many
threads any setting may ask of it; and how it names paths to a visitor (relative to the repository: a server's own
paths are never shown)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"  # the team's corpora and gold sets, beside the repository

RUNS_ENV = "LAB_RUNS_DIR"
MAX_THREADS = 2 * (os.cpu_count() or 1)  # torch threads any setting may ask for: more only stall the machine


def runs_folder(environ: Mapping[str, str] = os.environ) -> Path:
    """The runs folder, absolute: ``$LAB_RUNS_DIR`` (``~`` expanded) when set, else ``runs/`` in the repository."""
    value = environ.get(RUNS_ENV, "").strip()
    return (Path(value).expanduser() if value else REPO_ROOT / "runs").resolve()


def repo_relative(path: Path | str) -> str:
    """``path`` as the lab shows it: relative to the repository (``data``, ``../shared/data``); a relative one as it is."""
    return os.path.relpath(path, REPO_ROOT) if Path(path).is_absolute() else str(path)
