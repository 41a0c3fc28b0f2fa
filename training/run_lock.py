"""One writer per run directory: an exclusive lock (portalocker's, an ``flock`` on POSIX) on ``run.lock`` inside it,
released by the OS when the holder dies (``kill -9`` included).

Whoever writes a run takes it: ``training.train`` itself (any form of the command, ``torchrun`` included), and the
Train page, which takes it before it starts the process and hands the locked file to it (``LOCK_FD_ENV``), so the
run is never unguarded in between. The file also names its holder: the directory it guards (a copied folder's lock
never matches its new place), the PID and, for a page job, a digest of the owner's token (only the owner may stop
it). Only a held lock counts: the name in a file nobody holds is history, whatever it says.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import portalocker

from model.run_dir import RUN_LOCK_FILE as LOCK_FILE

LOCK_FD_ENV = "LAB_RUN_LOCK_FD"  # the page's locked file, inherited by the training process it starts
SETTLE_S = 2.0  # how long a taker waits for a holder that has the lock but has not yet written its name


class RunLocked(RuntimeError):
    """Another live process writes this run directory; the message names it."""


@dataclass(frozen=True)
class Holder:
    run_dir: str  # the directory the lock was taken for (resolved)
    pid: int
    started: float  # unix time
    owner: str = ""  # sha256 of the page session's token; "" for a command-line run

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        who = "a Train page job" if self.owner else "a command-line run"
        return f"process {self.pid} ({who}, since {since})"


def owner_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs: it exists and is not a zombie (ended, not yet reaped by its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc to look closer


def _locked(fd: int, flags: portalocker.LockFlags) -> bool:
    """Take ``flags`` (exclusive or shared) on ``fd`` without waiting; False when another descriptor holds it."""
    try:
        portalocker.lock(fd, flags | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.LockException:
        return False
    return True


def _read(fd: int) -> Holder | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode())
        return Holder(str(data["run_dir"]), int(data["pid"]), float(data["started"]), str(data.get("owner", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # empty (being written) or not ours


def _write(fd: int, holder: Holder) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder.__dict__).encode(), 0)


def _open(run_dir: Path, create: bool) -> int | None:
    try:
        return os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o644)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise RunLocked(f"{run_dir}: the path is too long for this file system") from None
        raise


def _names(found: Holder | None, run_dir: Path) -> bool:
    return found is not None and found.run_dir == str(Path(run_dir).resolve()) and pid_alive(found.pid)


def holder(run_dir: Path) -> Holder | None:
    """Who writes ``run_dir`` now, or None when nobody holds its lock. A held lock whose file does not say by whom
    (another tool, a moved folder) still names a holder, PID 0: never a second writer."""
    fd = _open(Path(run_dir), create=False)
    if fd is None:
        return None
    try:
        deadline = time.monotonic() + SETTLE_S
        while not _locked(fd, portalocker.LockFlags.SHARED):  # a shared probe, let go when the file is closed
            if _names(found := _read(fd), run_dir):
                return found
            if time.monotonic() > deadline:
                return Holder(str(Path(run_dir).resolve()), 0, time.time())
            time.sleep(0.01)  # a taker still writing its name
        return None
    finally:
        os.close(fd)


class RunLock:
    """The held lock of one run directory; ``release`` (or the process's end) lets it go."""

    def __init__(self, fd: int, holder: Holder) -> None:
        self.fd, self.holder = fd, holder  # fd: also a child's (``pass_fds``), which keeps the lock held while it lives

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the last descriptor of the locked file closed (a child's may live on) lets it go
            self.fd = -1

    def hand_to(self, pid: int) -> None:
        """Name ``pid`` (the process that inherited the lock) as the holder."""
        self.holder = Holder(self.holder.run_dir, pid, time.time(), self.holder.owner)
        _write(self.fd, self.holder)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire(run_dir: Path, owner: str = "") -> RunLock:
    """Take ``run_dir``'s lock for this process (creating the directory), or raise ``RunLocked`` naming the holder. A
    process started with the lock in ``LOCK_FD_ENV`` (by the page) adopts that descriptor instead. An OSError (a full
    disk) leaves nothing held, nor the lock file or the folder this call made."""
    run_dir = Path(run_dir)
    if (inherited := _inherited(run_dir)) is not None:
        return inherited
    made = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    new = not (run_dir / LOCK_FILE).exists()
    fd = _open(run_dir, create=True)
    try:
        _take(fd, run_dir)
        held = Holder(str(run_dir.resolve()), os.getpid(), time.time(), owner_digest(owner))
        _write(fd, held)
    except BaseException as err:
        os.close(fd)
        if isinstance(err, OSError) and new:
            (run_dir / LOCK_FILE).unlink(missing_ok=True)
        if isinstance(err, OSError) and made and not any(run_dir.iterdir()):
            run_dir.rmdir()
        raise
    return RunLock(fd, held)


def _take(fd: int, run_dir: Path) -> None:
    """``acquire``'s exclusive lock on ``fd``, or ``RunLocked`` naming who holds it."""
    deadline = time.monotonic() + SETTLE_S
    while not _locked(fd, portalocker.LockFlags.EXCLUSIVE):
        found = _read(fd)
        # A live holder that names this directory, or one that never says who it is: refuse. A reader's short shared
        # probe (``holder``) or a holder still writing its name: wait a moment.
        if _names(found, run_dir) or time.monotonic() > deadline:
            who = found.describe() if found is not None else "another process"
            raise RunLocked(f"{run_dir} is being written by {who}; wait for it to end or stop it first")
        time.sleep(0.01)


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
    held = Holder(str(run_dir.resolve()), os.getpid(), time.time(), found.owner if found else "")
    _write(fd, held)
    os.set_inheritable(fd, False)
    return RunLock(fd, held)
