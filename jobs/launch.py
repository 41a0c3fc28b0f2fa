"""Starting a training process: in its own session, output to train.log, holding the run's lock (handed to it), at
most ``LAB_MAX_JOBS`` at once per server; and running a tool of the lab to its end (``run_tool``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from model.run_dir import JOB_EVENTS_FILE as EVENTS_FILE
from model.run_dir import JOB_LOG_FILE as LOG_FILE
from training import run_lock
from training.run_lock import LOCK_FD_ENV, Holder, RunLocked, holder
from translate.settings import REPO_ROOT

CHILD_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "5"}
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")  # Debian's libtcmalloc-minimal4: faster, optional
PRELOAD_ENV = "LD_PRELOAD"
MAX_JOBS_ENV, DEFAULT_MAX_JOBS = "LAB_MAX_JOBS", 1  # one training at a time fills 2 cores
LAUNCH_LOCK = ".launch.lock"  # in the runs folder: counting the live jobs and starting one is one step


class JobError(RuntimeError):
    """A job cannot be started, stopped or resumed; the message says why, in words for the page."""


def record_event(run_dir: Path, kind: str, **fields: Any) -> None:
    """Append one event (start / stop / exit) to the run's job history."""
    with open(run_dir / EVENTS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": kind, "time": round(time.time(), 3), **fields}) + "\n")


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The job's environment: this process's, CHILD_ENV, then ``env``; tcmalloc preloaded only when installed, and
    preloads naming a missing file dropped (ld.so would print an error for every process the job starts)."""
    merged = {**os.environ, **CHILD_ENV, **(env or {})}
    preload = [p for p in re.split(r"[:\s]+", merged.pop(PRELOAD_ENV, "")) if p and ("/" not in p or Path(p).exists())]
    if TCMALLOC.exists() and str(TCMALLOC) not in preload:
        preload.append(str(TCMALLOC))
    return {**merged, PRELOAD_ENV: " ".join(preload)} if preload else merged


def live_runs(runs_dir: Path) -> list[tuple[Path, Holder]]:
    """The run folders of ``runs_dir`` whose lock is held now (symlinks are not runs: skipped)."""
    try:
        folders = [p for p in runs_dir.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    return [(p, h) for p in folders if (h := holder(p)) is not None]


def take_lock(run_dir: Path, owner: str = "") -> run_lock.RunLock:
    """The run's lock (``run_lock.acquire``), or JobError naming the process that holds it."""
    try:
        return run_lock.acquire(run_dir, owner)
    except RunLocked as err:
        who = found.describe() if (found := holder(run_dir)) else str(err)
        raise JobError(f"run {run_dir.name!r} is already training: {who}; stop it first, or watch it below") from None


def launch(
    run_dir: Path,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    owner: str = "",
    lock: run_lock.RunLock | None = None,
) -> int:
    """Start ``argv`` in its own session with output to train.log, handing it the run's lock (taken here, or the
    caller's ``lock``); ``owner``, the page session's token, may stop it; ``env`` adds to the environment. The PID."""
    runs_dir = run_dir.parent
    runs_dir.mkdir(parents=True, exist_ok=True)
    with open(runs_dir / LAUNCH_LOCK, "a") as launching:  # two sessions never both count zero jobs and start one
        fcntl.flock(launching, fcntl.LOCK_EX)
        refuse_if_full(run_dir)
        with contextlib.nullcontext(lock) if lock else take_lock(run_dir, owner) as held:
            fd = held.fd
            try:
                with open(run_dir / LOG_FILE, "a", encoding="utf-8") as log:
                    log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n")
                    log.flush()
                    proc = subprocess.Popen(
                        list(argv),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=REPO_ROOT,
                        env=child_environment({**(env or {}), LOCK_FD_ENV: str(fd)}),
                        start_new_session=True,
                        pass_fds=(fd,),
                    )
            except OSError as err:
                raise JobError(f"could not start the training process: {err}") from None
            held.hand_to(proc.pid)
    record_event(run_dir, "start", pid=proc.pid, argv=list(argv))

    def reap() -> None:  # waits for the child (no zombie) and records its exit; its lock ends with it
        record_event(run_dir, "exit", pid=proc.pid, returncode=proc.wait())

    threading.Thread(target=reap, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def refuse_if_full(run_dir: Path) -> None:
    """JobError when the server already runs ``$LAB_MAX_JOBS`` (default 1) jobs in other run folders."""
    value = os.environ.get(MAX_JOBS_ENV, "").strip() or str(DEFAULT_MAX_JOBS)
    if not value.isdigit() or int(value) < 1:
        raise JobError(f"{MAX_JOBS_ENV}={value!r}: expected a whole number of jobs, at least 1")
    busy = [p for p, _ in live_runs(run_dir.parent) if p.resolve() != run_dir.resolve()]
    if len(busy) >= int(value):
        raise JobError(
            f"{len(busy)} training job(s) already run on this server ({', '.join(p.name for p in busy)}; "
            f"{MAX_JOBS_ENV}={int(value)}): wait for it to finish, or stop it"
        )


def run_tool(module_args: Sequence[str], timeout_s: float) -> str | None:
    """Run ``python -m MODULE_ARGS`` to its end, threads quiet: None when it succeeded, else its last error line."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    argv = [sys.executable, "-m", *module_args]
    try:
        done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"it took over {timeout_s:g} s"
    lines = [line for line in done.stderr.splitlines() if line.strip() and "it/s]" not in line]
    return None if done.returncode == 0 else lines[-1] if lines else f"exit code {done.returncode}"
