"""One small server-wide pool for the heavy tools (attribution, the head scan, ranking, teaching, the toy task, an
index build): each holds a slot while it computes, and a request that finds none free waits in line and is told so,
so five visitors asking at once hold one tool's memory and CPU, not five. ``LAB_HEAVY_SLOTS`` sets the pool's size
(1 on 2 cores)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

SLOTS = max(1, int(os.environ.get("LAB_HEAVY_SLOTS", "1")))
MAX_WAIT_SECONDS = 120.0  # a request waits at most this long in line, then is refused in one line
HANDOVER_S = 0.05  # ``share``'s pause: time for the request its release woke to take the slot

_pool = threading.BoundedSemaphore(SLOTS)
_count = threading.Lock()
_asking: Counter[str | None] = Counter()  # requests running or waiting, by the browser session that asked (None: none)


class Busy(RuntimeError):
    """The pool stayed full for MAX_WAIT_SECONDS."""


def asking() -> int:
    """Requests holding a slot or waiting for one, across every session of this server."""
    with _count:
        return _asking.total()


def session() -> str | None:
    """The browser session this request runs for (None outside one: a background build, a test)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


@contextmanager
def slot() -> Iterator[None]:
    """Hold one slot of the pool for the block; wait for it at most MAX_WAIT_SECONDS (no st call: safe inside the
    page's cached functions)."""
    asker = session()
    with _count:
        _asking[asker] += 1
    try:
        if not _pool.acquire(timeout=MAX_WAIT_SECONDS):
            raise Busy(
                f"The server's heavy tools stayed busy for {MAX_WAIT_SECONDS:g} s ({SLOTS} at a time): try again."
            )
        try:
            yield
        finally:
            _pool.release()
    finally:
        with _count:
            _asking[asker] -= 1
            if not _asking[asker]:
                del _asking[asker]  # a session's count goes with its last request


def share() -> None:
    """Between two pieces of a long holder's work (an index build's batches): when another request waits, let it
    take the slot and run, then take the slot back (the holder waits as long as the line is)."""
    if asking() > SLOTS:
        _pool.release()
        time.sleep(HANDOVER_S)
        _pool.acquire()


@contextmanager
def in_line(tool: str) -> Iterator[None]:
    """Say on the page, while the block runs, that this request waits behind others (the wait itself is ``slot``'s):
    another visitor's, or this session's own earlier ones (a button pressed again while its request computes)."""
    note = st.empty()
    me = session()
    with _count:
        ahead, own = _asking.total() - SLOTS + 1, _asking[me] if me is not None else 0
    if ahead > 0:
        if ahead == 1:
            who = "your earlier request" if own else "another visitor's request"
        else:
            who = f"{ahead} requests" + (f", {min(own, ahead)} of them your earlier ones" if own else "")
        note.info(f"Heavy tools run one at a time on this server: your {tool} waits for {who}, then runs.")
    try:
        yield
    finally:
        note.empty()
