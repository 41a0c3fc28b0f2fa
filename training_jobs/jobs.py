"""Training jobs as background OS processes: one per run directory, guarded by a lock file that holds the PID.

The app never imports ``training/``: a job is ``python -m training.train ...`` in its own session (process
group), so it survives page reloads and closed tabs; the page reattaches by reading the run directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from model.run_dir import JOB_EVENTS_FILE as EVENTS_FILE
from model.run_dir import JOB_LOG_FILE as LOG_FILE
from model.run_dir import METRICS_LOG_FILE, REPO_ROOT, RESULT_FILE, STATE_FILE, TRAIN_CONFIG_FILE
from model.run_dir import RUNS_ENV as RUNS_ENV  # re-exported: the Train page and its tests name them through jobs
from model.run_dir import runs_folder as runs_folder
from training_jobs.job_lock import LOCK_FILE, Lock, external_pids, live_lock, pid_alive, read_lock, write_lock
from training_jobs.run_progress import read_jsonl

CONFIGS_DIR = REPO_ROOT / "configs"
PRESET_ORDER = ("tiny", "small", "base")
RUN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
STOP_GRACE_S = 10.0
CHILD_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "5"}
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")  # Debian's libtcmalloc-minimal4: faster, optional
PRELOAD_ENV = "LD_PRELOAD"

State = Literal["new", "running", "external", "finished", "stopped", "crashed"]


class JobError(RuntimeError):
    """A job cannot be started, stopped or resumed; the message says why, in words for the page."""


# ----------------------------------------------------------------------------------------- names and presets


def run_path(runs_dir: Path, name: str) -> Path:
    """``runs_dir/name`` for a valid run name (letters, digits, ``-``, ``_``); never a path outside ``runs_dir``."""
    if not RUN_NAME.fullmatch(name):
        raise JobError(f"invalid run name {name!r}: use 1–64 letters, digits, '-' or '_' (no spaces, dots or slashes)")
    root = runs_dir.resolve()
    path = (root / name).resolve()
    if path.parent != root:  # e.g. a symlink pointing elsewhere
        raise JobError(f"run name {name!r} resolves outside the runs folder {root}")
    return path


def list_presets(configs_dir: Path = CONFIGS_DIR) -> list[str]:
    """Preset names found in ``configs/`` (tiny, small, base first)."""
    names = [p.stem for p in configs_dir.glob("*.toml")]
    return sorted(names, key=lambda n: (PRESET_ORDER.index(n) if n in PRESET_ORDER else len(PRESET_ORDER), n))


def read_preset(path: Path) -> dict[str, Any]:
    """The preset's TOML tables (``data``, ``model``, ``optim``, ``run``); read, not validated (training does that)."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------------------- launching


def _event(run_dir: Path, kind: str, **fields: Any) -> None:
    """Append one event (start / stop / exit) to the run's job history."""
    with open(run_dir / EVENTS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": kind, "time": round(time.time(), 3), **fields}) + "\n")


def _reap(proc: subprocess.Popen, run_dir: Path) -> None:
    """Wait for the child (no zombie), record its exit code, and release its lock."""
    code = proc.wait()
    _event(run_dir, "exit", pid=proc.pid, returncode=code)
    lock = read_lock(run_dir)
    if lock is not None and lock.pid == proc.pid:
        (run_dir / LOCK_FILE).unlink(missing_ok=True)


def child_environment(
    env: Mapping[str, str] | None = None, environ: Mapping[str, str] = os.environ, tcmalloc: Path = TCMALLOC
) -> dict[str, str]:
    """The job's environment: ``environ``, CHILD_ENV, then ``env``; tcmalloc preloaded only when installed.

    Preloads naming a missing file are dropped: ld.so would print an error for every process the job starts.
    """
    merged = {**environ, **CHILD_ENV, **(env or {})}
    preload = [p for p in re.split(r"[:\s]+", merged.pop(PRELOAD_ENV, "")) if p and ("/" not in p or Path(p).exists())]
    if tcmalloc.exists() and str(tcmalloc) not in preload:
        preload.append(str(tcmalloc))
    return {**merged, PRELOAD_ENV: " ".join(preload)} if preload else merged


def launch(run_dir: Path, argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Start ``argv`` in its own session with output to train.log, holding the run's lock; returns the PID.

    ``env`` adds to (or overrides) this process's environment and CHILD_ENV; see ``child_environment``.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    refuse_if_busy(run_dir)
    try:
        write_lock(run_dir, os.getpid(), exclusive=True)  # ours until the child exists
    except FileExistsError:
        raise JobError(f"run {run_dir.name!r} is being started by another session; watch it below") from None
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
                env=child_environment(env),
                start_new_session=True,
            )
    except OSError as err:
        (run_dir / LOCK_FILE).unlink(missing_ok=True)
        raise JobError(f"could not start the training process: {err}") from None
    write_lock(run_dir, proc.pid, exclusive=False)
    _event(run_dir, "start", pid=proc.pid, argv=list(argv))
    threading.Thread(target=_reap, args=(proc, run_dir), name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def refuse_if_busy(run_dir: Path) -> None:
    """JobError when a job of this app, or a training process started elsewhere, is working in ``run_dir``."""
    lock = live_lock(run_dir)
    if lock is not None:
        since = time.strftime("%H:%M:%S", time.localtime(lock.started))
        raise JobError(
            f"run {run_dir.name!r} is already training (process {lock.pid}, since {since}); "
            "stop it first, or watch it below"
        )
    others = external_pids(run_dir)
    if others:
        raise JobError(
            f"run {run_dir.name!r} is being trained by a process started outside the app (PID "
            f"{', '.join(map(str, others))}); the app leaves it alone"
        )


# ----------------------------------------------------------------------------------------- start, stop, resume


def training_command(
    run_dir: Path,
    preset: Path | None = None,
    corpus: Path | None = None,
    overrides: Sequence[str] = (),
    resume: bool = False,
) -> list[str]:
    """``python -m training.train`` for a new run (preset + corpus) or for ``--resume``; overrides as ``k=v``."""
    argv = [sys.executable, "-m", "training.train", "--out", str(run_dir)]
    if resume:
        argv.append("--resume")
    else:
        if preset is None or corpus is None:
            raise JobError("a new run needs a preset and a corpus")
        argv += ["--config", str(preset), "--corpus", str(corpus)]
    return argv + [f"--{item.removeprefix('--')}" for item in overrides]


def holds_run(run_dir: Path) -> bool:
    """True once training has begun writing the run (its configuration, metrics or state)."""
    return any((run_dir / name).exists() for name in (TRAIN_CONFIG_FILE, METRICS_LOG_FILE, STATE_FILE, RESULT_FILE))


def start(
    run_dir: Path, preset: Path, corpus: Path, overrides: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> int:
    """Start a new training run in ``run_dir`` (which must not hold a run yet); returns the PID."""
    if holds_run(run_dir):
        raise JobError(f"a run named {run_dir.name!r} already exists: choose another name, or resume it below")
    return launch(run_dir, training_command(run_dir, preset, corpus, overrides), env)


def resume(run_dir: Path, overrides: Sequence[str] = (), env: Mapping[str, str] | None = None) -> int:
    """Continue a stopped or crashed run exactly from its last saved state; returns the PID."""
    if (run_dir / RESULT_FILE).exists():
        raise JobError(f"run {run_dir.name!r} has finished; start a new run to train more")
    if not (run_dir / STATE_FILE).is_file():
        raise JobError(
            f"run {run_dir.name!r} has no saved training state yet (it is written at each evaluation); "
            "start a new run instead"
        )
    return launch(run_dir, training_command(run_dir, overrides=overrides, resume=True), env)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the job's process group (its session), or only ``pid`` if it does not lead its own group."""
    try:
        group = os.getpgid(pid)
        if group == pid and group != os.getpgrp():
            os.killpg(group, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_dead(lock: Lock, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while pid_alive(lock.pid, lock.start_time):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop(run_dir: Path, grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the job's process group, SIGKILL after ``grace_s``; False when no job of this app was running."""
    lock = live_lock(run_dir)
    if lock is None:
        return False
    if lock.pid == os.getpid():  # the lock's placeholder while a job starts: never signal ourselves
        raise JobError(f"run {run_dir.name!r} is still starting; try again in a moment")
    _event(run_dir, "stop", pid=lock.pid)
    _signal_group(lock.pid, signal.SIGTERM)
    if not _wait_dead(lock, grace_s):
        _signal_group(lock.pid, signal.SIGKILL)
        _wait_dead(lock, 5.0)
    if read_lock(run_dir) == lock:
        (run_dir / LOCK_FILE).unlink(missing_ok=True)
    return True


# ----------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class JobStatus:
    state: State
    pid: int | None = None
    returncode: int | None = None  # None: still running, or exited while no process of this app watched it
    can_resume: bool = False


def _last_job(run_dir: Path) -> list[dict[str, Any]]:
    """The events of the most recent job (from its start event on)."""
    events = read_jsonl(run_dir / EVENTS_FILE)
    starts = [i for i, e in enumerate(events) if e.get("event") == "start"]
    return events[starts[-1] :] if starts else []


def running_run(run_dirs: Iterable[Path]) -> Path | None:
    """Of ``run_dirs``, the one whose job of this app started last and still runs; None when none runs."""
    live = [(lock.started, run_dir) for run_dir in run_dirs if (lock := live_lock(run_dir)) is not None]
    return max(live, key=lambda item: item[0])[1] if live else None


def log_tail(run_dir: Path, lines: int = 40, max_bytes: int = 64_000) -> str:
    """The last ``lines`` lines of train.log (progress-bar redraws split on carriage returns)."""
    path = run_dir / LOG_FILE
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - max_bytes))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    rows = [row.rstrip() for row in re.split(r"[\r\n]+", text)]
    return "\n".join([row for row in rows if row.strip()][-lines:])


def log_shows_error(tail: str) -> bool:
    """True when the log ends in a Python traceback or the CLI's ``error:`` message."""
    return any(
        row.startswith(("Traceback", "error:")) or re.match(r"^\w+(Error|Exception): ", row)
        for row in tail.splitlines()
    )


def job_status(run_dir: Path) -> JobStatus:
    """What the run is doing now, from its lock, /proc, result file, job history and log."""
    lock = live_lock(run_dir)
    if lock is not None:
        return JobStatus("running", lock.pid)
    others = external_pids(run_dir)
    if others:
        return JobStatus("external", others[0])
    if (run_dir / RESULT_FILE).exists():
        return JobStatus("finished")
    if not holds_run(run_dir) and not (run_dir / EVENTS_FILE).exists():
        return JobStatus("new")
    events = _last_job(run_dir)
    exits = [e for e in events if e.get("event") == "exit"]
    code = exits[-1].get("returncode") if exits else None
    if any(e.get("event") == "stop" for e in events):
        state: State = "stopped"
    elif code is not None:  # exited on its own without a result: non-zero, or zero before metrics.json
        state = "crashed"
    else:  # ended while no process of this app watched it: the log tells
        state = "crashed" if log_shows_error(log_tail(run_dir)) else "stopped"
    return JobStatus(state, None, code, (run_dir / STATE_FILE).is_file())
