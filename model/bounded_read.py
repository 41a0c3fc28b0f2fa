"""Reading a file someone handed the lab, bounded: a regular file only (a FIFO, a device or a link loop is refused
by ``stat`` before ``open``, so nothing blocks or reads without end), at most a given size, JSON at most MAX_DEPTH
deep with numbers of at most MAX_DIGITS characters; and messages that quote at most QUOTE characters of a value."""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_JSON_BYTES = 1 << 20  # a config.json is under a kilobyte
MAX_SETTINGS_BYTES = 1 << 20  # a preset, a recipe or a phrase list: a few kilobytes
MAX_DEPTH = 32  # nested arrays and objects: the lab's JSON files nest 3 deep
MAX_DIGITS = 40  # characters of one number: any float or int64 fits
QUOTE = 80  # characters of a bad value a message shows
SHOWN_PATH = 200  # characters of a path a message shows (one of 5,000 was quoted whole)
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')  # a JSON string, whose brackets are text
KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))


def cut(text: str, most: int = QUOTE) -> str:
    """``text`` cut to ``most`` characters, "…" marking the cut: a message stays one line whatever it names."""
    return text if len(text) <= most else f"{text[:most]}…"


def quoted(value: object) -> str:
    """``repr(value)`` cut to QUOTE characters (``cut``)."""
    return cut(repr(value[: QUOTE + 1] if isinstance(value, str | bytes | list | tuple) else value))


def real(path: Path) -> Path:
    """``path`` absolute, its links and ``..`` resolved; a link loop is left as it is (Python 3.11's
    ``Path.resolve`` raises RuntimeError on one), for the reader or the writer to refuse in one line."""
    return Path(os.path.realpath(path))


def regular_size(path: Path, error: type[Exception]) -> int:
    """The size of ``path`` (links followed) when it is a regular file; else ``error`` naming what it is."""
    try:
        mode = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except (OSError, ValueError) as err:  # a link loop (ELOOP), a name too long, no permission, a NUL byte
        raise error(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    if not stat.S_ISREG(mode.st_mode):
        kind = next((name for test, name in KINDS if test(mode.st_mode)), "a device")
        raise error(f"{path}: {kind}, not a regular file")
    return mode.st_size


def read_bytes(path: Path, limit: int, error: type[Exception], tail: bool = False) -> bytes:
    """The bytes of the regular file ``path``, refused (``error``) over ``limit`` bytes before any is read; ``tail``:
    its last ``limit`` bytes instead (all of it when shorter), a log's tail however long the log."""
    size = regular_size(path, error)
    if size > limit and not tail:
        raise error(f"{path}: {size:,} bytes; expected at most {limit:,}")
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:  # a FIFO put there since: no wait
            file.seek(max(0, size - limit) if tail else 0)
            data = file.read(limit if tail else limit + 1)
    except OSError as err:
        raise error(f"{path}: cannot be read ({err.strerror or err})") from None
    if len(data) > limit:  # it grew since
        raise error(f"{path}: over {limit:,} bytes")
    return data


def read_text(path: Path, limit: int, error: type[Exception]) -> str:
    """The UTF-8 text of ``path``, read as ``read_bytes`` does; bytes that are not UTF-8: ``error`` naming where."""
    try:
        return read_bytes(path, limit, error).decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path}: not UTF-8 text (byte {err.start})") from None


def read_json(path: Path, error: type[Exception], limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in ``path``, read as ``read_bytes`` does; too deep, too long a number or not JSON: ``error``."""

    def number(text: str, kind: type = int) -> int | float:
        if len(text) > MAX_DIGITS:
            raise error(f"{path}: a number of {len(text):,} characters ({text[:20]}…); expected at most {MAX_DIGITS}")
        return kind(text)

    try:
        text = read_bytes(path, limit, error).decode("utf-8")
        steps = (1 if c in "[{" else -1 for c in STRING.sub("", text) if c in "[]{}")  # brackets outside strings
        if max(itertools.accumulate(steps), default=0) > MAX_DEPTH:
            raise error(f"{path}: JSON nested over {MAX_DEPTH} deep; expected at most {MAX_DEPTH}")
        return json.loads(text, parse_int=number, parse_float=lambda t: number(t, float))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(f"{path}: not valid JSON ({str(err)[:QUOTE]})") from None
