"""What a command may write, checked before its work starts: a refusal comes first, in one line, and writes nothing.

A model folder replaces only an empty folder or one this project wrote: ``config.json``, the weights and nothing a
model directory does not hold (``MODEL_DIR_NAMES``); a run or someone's files are named, never deleted. A report
(``--json``, ``--hyp``) or a file appended to must be a regular file, or a new one where one can be created.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from model.run_dir import CONFIG_FILE, MODEL_DIR_NAMES, WEIGHTS_FILE

SHOWN = 5  # names quoted in a refusal


class OutputError(ValueError):
    """An output the command may not write; the message names the option, the path and what is there."""


def _probe(folder: Path, option: str, path: Path) -> None:
    """Create and remove a file in ``folder`` (or its nearest existing parent): the one test that cannot lie."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".write-check-")
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        raise OutputError(f"{option} {path}: cannot write in {folder} ({err.strerror or err})") from None


def check_model_dir(out: Path) -> None:
    """Raise OutputError unless a model folder may be put at ``out``: new, empty, or a model folder this project wrote."""
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise OutputError(f"--out {out} exists and is not a folder; not replaced")
        names = {p.name for p in out.iterdir()}
        foreign, missing = sorted(names - MODEL_DIR_NAMES), sorted({CONFIG_FILE, WEIGHTS_FILE} - names)
        if foreign or (names and missing):
            more = " …" if len(foreign) > SHOWN else ""
            what = f"it holds {', '.join(foreign[:SHOWN])}{more}" if foreign else f"no {' or '.join(missing)}"
            raise OutputError(
                f"--out {out} is not a model directory ({what}); not replaced: choose a new or empty folder"
            )
    _probe(out.resolve().parent, "--out", out)


def check_file(path: Path, option: str) -> None:
    """Raise OutputError unless ``path`` can be written as a file: an existing one is opened, never changed; a missing
    folder is made."""
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise OutputError(f"{option} {path} is not a regular file; give a file name")
    try:
        if path.exists():
            open(path, "ab").close()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{option} {path}: cannot be written ({err.strerror or err})") from None
    _probe(path.parent, option, path)
