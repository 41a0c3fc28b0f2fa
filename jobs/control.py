"""Training jobs as background OS processes: one writer per run directory (``run_lock``), at most
``LAB_MAX_JOBS`` at once per server, each stoppable only by the session that started it.

The app never runs training in its own process (it reads presets with training's typed loader, nothing more): a job
is ``python -m training.train ...`` in its own session (process group), so it survives page reloads and closed
tabs; the page reattaches by reading the run directory. The page
takes the run's lock before it starts the process and hands the locked file to it, so a second Start, a
command-line run or a ``--resume`` elsewhere is refused, whoever comes second.

Resume is open to every session: it continues the saved state exactly and loses nothing, and the session that
resumes becomes the owner of the new process. Stop is the owner's alone: it ends someone's work.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jobs.run_progress import read_jsonl
from model.config import ConfigError
from model.run_dir import JOB_EVENTS_FILE as EVENTS_FILE
from model.run_dir import JOB_LOG_FILE as LOG_FILE
from model.run_dir import METRICS_LOG_FILE, RESULT_FILE, STATE_FILE, TRAIN_CONFIG_FILE
from training import run_lock
from training.run_lock import LOCK_FD_ENV, Holder, RunLocked, holder, owner_digest, pid_alive
from training.train_config import TrainConfig, load_train_config
from translate.settings import REPO_ROOT
from translate.settings import RUNS_ENV as RUNS_ENV  # re-exported: the Train page and its tests name them through jobs
from translate.settings import runs_folder as runs_folder

CONFIGS_DIR = REPO_ROOT / "configs"
PRESET_ORDER = ("tiny", "small", "base")
RUN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
STOP_GRACE_S = 10.0
CHILD_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "5"}
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")  # Debian's libtcmalloc-minimal4: faster, optional
PRELOAD_ENV = "LD_PRELOAD"
MAX_JOBS_ENV, DEFAULT_MAX_JOBS = "LAB_MAX_JOBS", 1  # one training at a time fills 2 cores
LAUNCH_LOCK = ".launch.lock"  # in the runs folder: counting the live jobs and starting one is one step

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


def read_preset(path: Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """The preset (with ``overrides``), typed and checked as training will read it (the one home of every default);
    JobError naming the file and key when it is not valid."""
    try:
        return load_train_config(path, list(overrides))
    except ConfigError as err:
        raise JobError(str(err)) from None


# ----------------------------------------------------------------------------------------- launching


def _event(run_dir: Path, kind: str, **fields: Any) -> None:
    """Append one event (start / stop / exit) to the run's job history."""
    with open(run_dir / EVENTS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": kind, "time": round(time.time(), 3), **fields}) + "\n")


def _reap(proc: subprocess.Popen, run_dir: Path) -> None:
    """Wait for the child (no zombie) and record its exit code; its lock ends with it."""
    code = proc.wait()
    _event(run_dir, "exit", pid=proc.pid, returncode=code)


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


def max_jobs(environ: Mapping[str, str] = os.environ) -> int:
    """``$LAB_MAX_JOBS`` (default 1): training jobs this server runs at once."""
    value = environ.get(MAX_JOBS_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_JOBS
    if not value.isdigit() or int(value) < 1:
        raise JobError(f"{MAX_JOBS_ENV}={value!r}: expected a whole number of jobs, at least 1")
    return int(value)


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
    """Start ``argv`` in its own session with output to train.log, holding the run's lock; returns the PID.

    The lock (taken here, or ``lock``, held by the caller) is handed to the process (``LOCK_FD_ENV``); ``owner``
    (the page session's token) is the one that may stop it. ``env`` adds to (or overrides) this process's
    environment and CHILD_ENV."""
    runs_dir = run_dir.parent
    runs_dir.mkdir(parents=True, exist_ok=True)
    with _launching(runs_dir):
        refuse_if_full(run_dir)
        with contextlib.nullcontext(lock) if lock else take_lock(run_dir, owner) as held:
            proc = _spawn(run_dir, argv, {**(env or {}), LOCK_FD_ENV: str(held.inheritable_fd())}, held)
            held.hand_to(proc.pid)
    _event(run_dir, "start", pid=proc.pid, argv=list(argv))
    threading.Thread(target=_reap, args=(proc, run_dir), name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def refuse_if_full(run_dir: Path) -> None:
    """JobError when the server already runs ``$LAB_MAX_JOBS`` jobs in other run folders than ``run_dir``."""
    busy = [p for p, _ in live_runs(run_dir.parent) if p.resolve() != run_dir.resolve()]
    if len(busy) >= max_jobs():
        raise JobError(
            f"{len(busy)} training job(s) already run on this server ({', '.join(p.name for p in busy)}; "
            f"{MAX_JOBS_ENV}={max_jobs()}): wait for it to finish, or stop it"
        )


class _launching:
    """The runs folder's launch lock (flock): two sessions never both count zero jobs and both start one."""

    def __init__(self, runs_dir: Path) -> None:
        self.path = runs_dir / LAUNCH_LOCK

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _spawn(run_dir: Path, argv: Sequence[str], env: Mapping[str, str], lock: run_lock.RunLock) -> subprocess.Popen:
    try:
        with open(run_dir / LOG_FILE, "a", encoding="utf-8") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n")
            log.flush()
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=child_environment(env),
                start_new_session=True,
                pass_fds=(lock.inheritable_fd(),),
            )
    except OSError as err:
        raise JobError(f"could not start the training process: {err}") from None


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
    run_dir: Path,
    preset: Path,
    corpus: Path,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    owner: str = "",
) -> int:
    """Start a new training run in ``run_dir`` (which must not hold a run yet); returns the PID."""
    if holds_run(run_dir):
        raise JobError(f"a run named {run_dir.name!r} already exists: choose another name, or resume it below")
    return launch(run_dir, training_command(run_dir, preset, corpus, overrides), env, owner)


def start_staged(
    run_dir: Path,
    preset: Path,
    stage: Callable[[], Path],
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    owner: str = "",
) -> int:
    """``start`` for the Train page: refuse first (job cap reached), then take the run's lock (refused while another
    Start or job holds it), refuse a run that exists, ``stage()`` (writes the corpus into ``run_dir`` and returns it)
    and start, all under the lock. A start that fails removes what it staged, still under the lock: a refused Start
    writes nothing (the cap is checked again, under the launch lock, when the job is launched)."""
    refuse_if_full(run_dir)
    before = {p.name for p in run_dir.iterdir()} if run_dir.is_dir() else None
    with take_lock(run_dir, owner) as lock:
        try:
            if holds_run(run_dir):
                raise JobError(f"a run named {run_dir.name!r} already exists: choose another name")
            argv = training_command(run_dir, preset, stage(), overrides)
            return launch(run_dir, argv, env, owner, lock)
        except BaseException:
            _unstage(run_dir, before)
            raise


def _unstage(run_dir: Path, before: set[str] | None) -> None:
    """Remove what a failed start wrote into ``run_dir`` (the whole folder if it made it); called under its lock."""
    if not run_dir.is_dir():
        return
    if before is None:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for path in run_dir.iterdir():
        if path.name in before:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def resume(run_dir: Path, overrides: Sequence[str] = (), env: Mapping[str, str] | None = None, owner: str = "") -> int:
    """Continue a stopped or crashed run exactly from its last saved state; returns the PID."""
    if (run_dir / RESULT_FILE).exists():
        raise JobError(f"run {run_dir.name!r} has finished; start a new run to train more")
    if not (run_dir / STATE_FILE).is_file():
        raise JobError(
            f"run {run_dir.name!r} has no saved training state yet (it is written at each evaluation); "
            "start a new run instead"
        )
    return launch(run_dir, training_command(run_dir, overrides=overrides, resume=True), env, owner)


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


def _wait_dead(found: Holder, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while pid_alive(found.pid, found.start_time):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop(run_dir: Path, owner: str = "", grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the job's process group, SIGKILL after ``grace_s``; False when nothing was running.

    Only a process whose lock names ``run_dir`` is signalled (never a copy's stale PID), and only by ``owner``, the
    token of the session that started or resumed it; a command-line run is never signalled."""
    found = holder(run_dir)
    if found is None:
        return False
    if not found.owner or found.pid <= 0:
        raise JobError(f"run {run_dir.name!r} is written by {found.describe()}: stop it where it was started")
    if found.owner != owner_digest(owner):
        raise JobError(f"run {run_dir.name!r} was started by another session: only that session can stop it")
    _event(run_dir, "stop", pid=found.pid)
    _signal_group(found.pid, signal.SIGTERM)
    if not _wait_dead(found, grace_s):
        _signal_group(found.pid, signal.SIGKILL)
        _wait_dead(found, 5.0)
    return True


# ----------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class JobStatus:
    state: State
    pid: int | None = None
    returncode: int | None = None  # None: still running, or exited while no process of this app watched it
    can_resume: bool = False
    owner: str = ""  # digest of the owner's token (a running page job)

    def owned_by(self, token: str) -> bool:
        return bool(self.owner) and self.owner == owner_digest(token)


def _last_job(run_dir: Path) -> list[dict[str, Any]]:
    """The events of the most recent job (from its start event on)."""
    events = read_jsonl(run_dir / EVENTS_FILE)
    starts = [i for i, e in enumerate(events) if e.get("event") == "start"]
    return events[starts[-1] :] if starts else []


def running_run(run_dirs: Iterable[Path]) -> Path | None:
    """Of ``run_dirs``, the one whose job of this app started last and still runs; None when none runs."""
    live = [(found.started, run_dir) for run_dir in run_dirs if (found := holder(run_dir)) is not None]
    return max(live, key=lambda item: item[0])[1] if live else None


def run_tool(module_args: Sequence[str], timeout_s: float) -> tuple[int | None, str]:
    """Run ``python -m MODULE_ARGS`` from the repository to its end, its threads quiet as a job's: the exit code
    (None when killed after ``timeout_s``) and its last error line, progress bars left out."""
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    argv = [sys.executable, "-m", *module_args]
    try:
        done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"it took over {timeout_s:g} s"
    lines = [line for line in done.stderr.splitlines() if line.strip() and "it/s]" not in line]
    return done.returncode, lines[-1] if lines else f"exit code {done.returncode}"


def watched_runs(runs_dir: Path) -> tuple[list[str], list[str]]:
    """Run folders the Train page can show (any that training, or this app, has written to), and the symbolic links
    in the runs folder, which are skipped: a link may point anywhere, and a run is a real folder."""
    try:
        entries = list(runs_dir.iterdir()) if runs_dir.is_dir() else []
    except OSError:
        return [], []
    links = sorted(p.name for p in entries if p.is_symlink())
    found = [p for p in entries if not p.is_symlink() and p.is_dir() and RUN_NAME.fullmatch(p.name)]
    return sorted(p.name for p in found if holds_run(p) or (p / EVENTS_FILE).exists()), links


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
    found = holder(run_dir)
    if found is not None:
        return JobStatus("running", found.pid, owner=found.owner) if found.owner else JobStatus("external", found.pid)
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
