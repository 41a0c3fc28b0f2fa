"""One writer per run directory: an exclusive ``flock`` on ``run.lock`` inside it, released by the OS when the
holder dies (``kill -9`` included).

Whoever writes a run takes it: ``training.train`` itself (any form of the command, ``torchrun`` included), and the
Train page, which takes it before it starts the process and hands the locked file to it (``LOCK_FD_ENV``), so the
run is never unguarded in between. The file also says who holds it: the directory it guards (a copied folder's
lock never matches its new place), the PID with its kernel start time (a reused PID never matches) and, for a page
job, a digest of the owner's token (only the owner may stop it).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from model.run_dir import RUN_LOCK_FILE as LOCK_FILE

LOCK_FD_ENV = "LAB_RUN_LOCK_FD"  # the page's locked file, inherited by the training process it starts
SETTLE_S = 2.0  # how long a taker waits for a holder that has the lock but has not yet written its name


class RunLocked(RuntimeError):
    """Another live process writes this run directory; the message names it."""


@dataclass(frozen=True)
class Holder:
    run_dir: str  # the directory the lock was taken for (resolved)
    pid: int
    start_time: int | None  # the kernel's start time of ``pid``: detects a PID reused by another process
    started: float  # unix time
    owner: str = ""  # sha256 of the page session's token; "" for a command-line run

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        who = "a Train page job" if self.owner else "a command-line run"
        return f"process {self.pid} ({who}, since {since})"


def owner_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""


# ----------------------------------------------------------------------------------------- processes


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


# ----------------------------------------------------------------------------------------- the lock


def _read(fd: int) -> Holder | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode())
        return Holder(
            str(data["run_dir"]),
            int(data["pid"]),
            data.get("start_time"),
            float(data["started"]),
            str(data.get("owner", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # empty (being written) or not ours


def _write(fd: int, holder: Holder) -> None:
    data = json.dumps(holder.__dict__).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _open(run_dir: Path, create: bool) -> int | None:
    flags = os.O_RDWR | (os.O_CREAT if create else 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(run_dir / LOCK_FILE, flags, 0o644)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise RunLocked(f"{run_dir}: the path is too long for this file system") from None
        raise


def holder(run_dir: Path) -> Holder | None:
    """Who writes ``run_dir`` now, or None. A lock file that nobody holds (the writer ended, or the folder is a copy)
    is not a holder, whatever it says; a held one must name this directory and a live process."""
    fd = _open(Path(run_dir), create=False)
    if fd is None:
        return None
    try:
        deadline = time.monotonic() + SETTLE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                found = _read(fd)
                if found is not None and _names(found, run_dir):
                    return found
                if time.monotonic() > deadline:
                    return _unknown(run_dir)
                time.sleep(0.01)  # a taker still writing its name
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
    finally:
        os.close(fd)


def _names(found: Holder, run_dir: Path) -> bool:
    return found.run_dir == str(Path(run_dir).resolve()) and pid_alive(found.pid, found.start_time)


def _unknown(run_dir: Path) -> Holder:
    """Held, but the file does not say by whom (another tool, or a moved folder): still never a second writer."""
    return Holder(str(Path(run_dir).resolve()), 0, None, time.time())


class RunLock:
    """The held lock of one run directory; ``release`` (or the process's end) lets it go."""

    def __init__(self, fd: int, holder: Holder) -> None:
        self.fd, self.holder = fd, holder

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last descriptor of the open file releases the flock
            self.fd = -1

    def inheritable_fd(self) -> int:
        """A descriptor of the locked file for a child process (``pass_fds``): the lock stays held while it lives."""
        return self.fd

    def hand_to(self, pid: int) -> None:
        """Name ``pid`` (the process that inherited the lock) as the holder."""
        self.holder = Holder(self.holder.run_dir, pid, process_start_time(pid), time.time(), self.holder.owner)
        _write(self.fd, self.holder)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire(run_dir: Path, owner: str = "") -> RunLock:
    """Take ``run_dir``'s lock for this process (creating the directory), or raise ``RunLocked`` naming the holder.

    A process started with the lock in ``LOCK_FD_ENV`` (by the page) adopts that descriptor instead. An OSError (a
    full disk) leaves nothing held, nor the lock file or the folder this call made."""
    run_dir = Path(run_dir)
    inherited = _inherited(run_dir)
    if inherited is not None:
        return inherited
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    new = not (run_dir / LOCK_FILE).exists()
    try:
        return _take(run_dir, owner)
    except OSError:
        if new:
            (run_dir / LOCK_FILE).unlink(missing_ok=True)
        if made and not any(run_dir.iterdir()):
            run_dir.rmdir()
        raise


def _take(run_dir: Path, owner: str) -> RunLock:
    """``acquire``'s lock, its descriptor closed again when the holder's name cannot be written."""
    fd = _open(run_dir, create=True)
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            found = _read(fd)
            # A live holder that names this directory, or one that never says who it is: refuse. A reader's short
            # shared probe (``holder``) or a holder still writing its name: wait a moment.
            if (found is not None and _names(found, run_dir)) or time.monotonic() > deadline:
                os.close(fd)
                who = found.describe() if found is not None else "another process"
                raise RunLocked(f"{run_dir} is being written by {who}; wait for it to end or stop it first") from None
            time.sleep(0.01)
    pid = os.getpid()
    held = Holder(str(run_dir.resolve()), pid, process_start_time(pid), time.time(), owner_digest(owner))
    try:
        _write(fd, held)
    except OSError:
        os.close(fd)
        raise
    return RunLock(fd, held)


def _inherited(run_dir: Path) -> RunLock | None:
    """The lock the page handed over, if ``LOCK_FD_ENV`` names a descriptor of this directory's lock file."""
    value = os.environ.pop(LOCK_FD_ENV, "")
    if not value.isdigit():
        return None
    fd = int(value)
    try:
        mine, theirs = os.fstat(fd), os.stat(run_dir / LOCK_FILE)
    except OSError:
        return None
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        return None
    found = _read(fd)
    pid = os.getpid()
    held = Holder(str(run_dir.resolve()), pid, process_start_time(pid), time.time(), found.owner if found else "")
    _write(fd, held)
    os.set_inheritable(fd, False)
    return RunLock(fd, held)
