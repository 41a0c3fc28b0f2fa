"""What a command may write, checked before its work starts: a refusal comes first, in one line, and writes nothing.

A run or someone's files are named, never deleted or written over. A link that leads nowhere (to itself, or to a
missing path) is refused: writing through it would fail after the work, or land where the user does not look.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from model.bounded_read import real
from model.run_dir import CONFIG_FILE, MODEL_DIR_NAMES, RUN_DIR_NAMES, RUN_FOLDERS, WEIGHTS_FILE

SHOWN = 5  # names quoted in a refusal


class OutputError(ValueError):
    """An output the command may not write; the message names the option, the path and what is there."""


def _probe(folder: Path, option: str, path: Path) -> None:
    """Create and remove a file in ``folder`` (or its nearest existing parent): the one test that cannot lie."""
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".write-check-")
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        raise OutputError(f"{option} {path}: cannot write in {folder} ({err.strerror or err})") from None


def check_target(path: Path, option: str) -> None:
    """Raise OutputError when ``path`` is a link that leads nowhere (to itself, or to a missing path)."""
    if path.is_symlink() and not path.exists():
        raise OutputError(f"{option} {path} is a link to a missing path or to itself; give another name")


def _holding(names: list[str]) -> str:
    return f"it holds {', '.join(names[:SHOWN])}{' …' if len(names) > SHOWN else ''}"


def check_model_dir(out: Path, reads: Sequence[tuple[str, Path]] = ()) -> None:
    """Raise OutputError unless a model folder may be put at ``out``: new, empty, or a model folder this project wrote;
    and neither one of the folders the command reads (``reads``: what to call it, its path), nor inside, nor holding
    one."""
    check_target(out, "--out")
    dest = real(out)
    for noun, folder in reads:
        read = real(folder)
        if dest == read:
            raise OutputError(f"--out {out} is {noun} itself; write to a new directory")
        if read in dest.parents:
            raise OutputError(f"--out {out} is inside {noun} {folder}; write to a directory outside it")
        if dest in read.parents:
            raise OutputError(f"--out {out} contains {noun} {folder}; replacing it would delete it")
    if out.exists():
        if not out.is_dir():
            raise OutputError(f"--out {out} exists and is not a folder; not replaced")
        names = {p.name for p in out.iterdir()}
        foreign, missing = sorted(names - MODEL_DIR_NAMES), sorted({CONFIG_FILE, WEIGHTS_FILE} - names)
        if foreign or (names and missing):
            what = _holding(foreign) if foreign else f"no {' or '.join(missing)}"
            raise OutputError(
                f"--out {out} is not a model directory ({what}); not replaced: choose a new or empty folder"
            )
    _probe(dest.parent, "--out", out)


def check_run_dir(out: Path, resume: bool = False) -> None:
    """Raise OutputError unless a run may write into ``out``: new, empty, or holding only what a run and the Train
    page write (a run stopped before its first save, a staged corpus; with ``resume``, other files too), each as a
    run writes it: no link, no FIFO, a folder only where a run makes one."""
    check_target(out, "--out")
    entries = list(out.iterdir()) if out.is_dir() else []
    foreign = sorted(p.name for p in entries if p.name not in RUN_DIR_NAMES)
    if foreign and not resume:
        raise OutputError(
            f"--out {out} is not a run directory ({_holding(foreign)}); nothing written: choose a new or empty folder"
        )
    for path in (p for p in entries if p.name in RUN_DIR_NAMES):
        folder = path.name in RUN_FOLDERS
        if path.is_symlink() or not (path.is_dir() if folder else path.is_file()):
            raise OutputError(
                f"--out {out}: its {path.name} is not {'a folder' if folder else 'a regular file'} as a run writes it; "
                "nothing written: move it away"
            )


def check_file(path: Path, option: str) -> None:
    """Raise OutputError unless ``path`` can be written as a file: an existing one is opened, never changed; a missing
    folder is made."""
    check_target(path, option)
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
