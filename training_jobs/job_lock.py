"""The lock file of a run directory and the liveness of the process it names (PID reuse and zombies included)."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from model.run_dir import JOB_LOCK_FILE as LOCK_FILE  # {"pid", "start_time", "started"} of the live job


@dataclass(frozen=True)
class Lock:
    pid: int
    start_time: int | None  # the kernel's start time of ``pid``: detects a PID reused by another process
    started: float  # unix time


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/PID/stat`` after the command name (state first), or None where unavailable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (Linux), None elsewhere or when it does not exist."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def pid_alive(pid: int, start_time: int | None = None) -> bool:
    """True if ``pid`` runs (not a zombie) and, when ``start_time`` is given, is the same process as then."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    fields = _proc_stat(pid)
    if fields is None:
        return sys.platform != "linux"  # no /proc to look closer
    if fields[0] in ("Z", "X"):
        return False
    return start_time is None or process_start_time(pid) == start_time


def read_lock(run_dir: Path) -> Lock | None:
    """The lock file's content, or None when there is none (or it is unreadable: a crash mid-write)."""
    try:
        data = json.loads((run_dir / LOCK_FILE).read_text())
        return Lock(int(data["pid"]), data.get("start_time"), float(data.get("started", 0.0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_lock(run_dir: Path) -> Lock | None:
    """The lock of a live job; a stale lock (dead or reused PID, unreadable file) is removed and None returned."""
    path = run_dir / LOCK_FILE
    lock = read_lock(run_dir)
    if lock is not None and pid_alive(lock.pid, lock.start_time):
        return lock
    if path.exists() and (lock is None or read_lock(run_dir) == lock):
        path.unlink(missing_ok=True)
    return None


def write_lock(run_dir: Path, pid: int, exclusive: bool) -> None:
    """Create the lock (exclusive: fails if one exists) or replace it atomically."""
    data = json.dumps({"pid": pid, "start_time": process_start_time(pid), "started": time.time()})
    path = run_dir / LOCK_FILE
    if exclusive:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(data)
        return
    tmp = path.with_name(LOCK_FILE + ".tmp")
    tmp.write_text(data)
    tmp.replace(path)


def external_pids(run_dir: Path) -> list[int]:
    """PIDs of ``training.train`` processes writing to ``run_dir`` without this app's lock (Linux /proc scan)."""
    target, locked = run_dir.resolve(), read_lock(run_dir)
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if "training.train" not in args:
                continue
            out = next((a.split("=", 1)[1] for a in args if a.startswith("--out=")), None)
            if out is None and "--out" in args[:-1]:
                out = args[args.index("--out") + 1]
            if out is not None and (Path(os.readlink(proc / "cwd")) / out).resolve() == target:
                found.append(int(proc.name))
        except OSError:
            continue
    return [pid for pid in found if locked is None or pid != locked.pid]
