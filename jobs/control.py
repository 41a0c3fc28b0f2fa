"""Training jobs of the Train page: start, resume and stop a run, and read what it is doing. A job is
``python -m training.train ...`` in its own session (jobs/launch.py) holding the run's lock, so it survives closed
tabs and a second Start, command-line run or ``--resume`` is refused. Any session may resume (the saved state
continues exactly, and the resuming session owns the process); only the owner may stop it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from data.tokenizer import Tokenizer, TokenizerError
from jobs.launch import JobError, launch, record_event, refuse_if_full, take_lock
from jobs.run_progress import read_json, read_jsonl
from model.bounded_read import read_bytes, real
from model.config import ConfigError
from model.run_dir import CONFIG_FILE, METRICS_LOG_FILE, RESULT_FILE, STATE_FILE, TRAIN_CONFIG_FILE, WEIGHTS_FILE
from model.run_dir import JOB_EVENTS_FILE as EVENTS_FILE
from model.run_dir import JOB_LOG_FILE as LOG_FILE
from model.run_dir import RUN_LOCK_FILE as LOCK_FILE
from training.outputs import OutputError, check_run_dir
from training.run_lock import Holder, holder, owner_digest, pid_alive
from training.train_config import TrainConfig, load_train_config
from translate.settings import REPO_ROOT
from translate.settings import RUNS_ENV as RUNS_ENV  # re-exported: the Train page and its tests name them through jobs
from translate.settings import runs_folder as runs_folder

CONFIGS_DIR = REPO_ROOT / "configs"
PRESET_ORDER = ("tiny", "small", "base")
RUN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
STOP_GRACE_S = 10.0
FINETUNE_LR = 1e-4  # a tenth of the presets' 1e-3: the parent's knowledge survives a few hundred steps
MAX_FINETUNE_LR = 1e-2

State = Literal["new", "running", "external", "finished", "stopped", "crashed"]


# ----------------------------------------------------------------------------------------- names and presets


def run_path(runs_dir: Path, name: str) -> Path:
    """``runs_dir/name`` for a valid run name (letters, digits, ``-``, ``_``); never a path outside ``runs_dir``."""
    if not RUN_NAME.fullmatch(name):
        raise JobError(f"invalid run name {name!r}: use 1–64 letters, digits, '-' or '_' (no spaces, dots or slashes)")
    root = real(runs_dir)
    path = real(root / name)
    if path.parent != root:  # e.g. a symlink pointing elsewhere
        raise JobError(f"run name {name!r} resolves outside the runs folder {root}")
    if path.is_symlink():  # resolved, and still a link: a loop
        raise JobError(f"run name {name!r} is a link to itself in the runs folder: choose another name")
    return path


def list_presets() -> list[str]:
    """Preset names found in ``configs/`` (tiny, small, base first)."""
    names = [p.stem for p in CONFIGS_DIR.glob("*.toml")]
    return sorted(names, key=lambda n: (PRESET_ORDER.index(n) if n in PRESET_ORDER else len(PRESET_ORDER), n))


def read_preset(path: Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """The preset (with ``overrides``) as training will read it; JobError naming the file and key when invalid."""
    try:
        return load_train_config(path, list(overrides))
    except ConfigError as err:
        raise JobError(str(err)) from None


# ----------------------------------------------------------------------------------------- fine-tuning


def fine_tune_overrides(parent: Path, lr: float = FINETUNE_LR) -> list[str]:
    """The overrides that start a run from the finished model ``parent`` (its tokenizer, shape and weights; a fresh
    optimizer and schedule): run.init_from, a small learning rate so that a small corpus adjusts the model instead of
    overwriting it (reached after the preset's warmup: a gentle start kept more of the parent on 1,000 Tatoeba pairs
    than a 100-step warmup did), the parent's case markup; JobError for no model directory or ``lr`` out of range."""
    if not all((parent / name).is_file() for name in (CONFIG_FILE, WEIGHTS_FILE)):
        raise JobError(f"{parent} is not a finished model ({CONFIG_FILE} and {WEIGHTS_FILE} expected)")
    if not 0 < lr <= MAX_FINETUNE_LR:
        raise JobError(f"learning rate {lr:g}: expected a number above 0 and at most {MAX_FINETUNE_LR:g}")
    try:
        tokenizer = Tokenizer.load(parent)
    except TokenizerError as err:
        raise JobError(f"{parent}: {err}") from None
    return [
        f"run.init_from={parent.resolve()}",
        f"optim.lr={lr:g}",
        f"data.case_markup={str(tokenizer.case_markup).lower()}",
    ]


def parent_score(parent: Path) -> tuple[float, str] | None:
    """(BLEU, "dev BLEU" or else "test BLEU") a model to fine-tune records in its metrics.json; None for neither."""
    scores = read_json(parent / RESULT_FILE) or {}
    for key, which in (("dev_greedy", "dev BLEU"), ("test_greedy", "test BLEU")):
        row = scores.get(key)
        if isinstance(row, dict) and isinstance(row.get("bleu"), int | float):
            return float(row["bleu"]), which
    return None


# ----------------------------------------------------------------------------------------- start, stop, resume


def training_command(run_dir: Path, args: Sequence[str], overrides: Sequence[str] = ()) -> list[str]:
    """``python -m training.train`` with ``args`` (``--config``, ``--corpus``; or ``--resume``) and overrides."""
    argv = [sys.executable, "-m", "training.train", "--out", str(run_dir), *args]
    return argv + [f"--{item.removeprefix('--')}" for item in overrides]


def holds_run(run_dir: Path) -> bool:
    """True once training has begun writing the run (its configuration, metrics or state)."""
    return any((run_dir / name).exists() for name in (TRAIN_CONFIG_FILE, METRICS_LOG_FILE, STATE_FILE, RESULT_FILE))


def taken(run_dir: Path) -> bool:
    """True when the folder holds a run or a training process holds its lock: not a new run's place."""
    return holds_run(run_dir) or holder(run_dir) is not None


def start_staged(
    run_dir: Path,
    preset: Path,
    stage: Callable[[], Path],
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    owner: str = "",
) -> int:
    """Start a new run; returns the PID. Under the run's lock: refuse a run that exists, ``stage()`` (writes the corpus
    into ``run_dir``, returns it), launch. A refused Start writes nothing; a failed one removes only what it staged."""
    refuse_if_full(run_dir)
    existed, lock_existed = run_dir.is_dir(), (run_dir / LOCK_FILE).exists()
    with take_lock(run_dir, owner) as lock:
        before = {p.name for p in run_dir.iterdir()} - (set() if lock_existed else {LOCK_FILE})
        try:
            if holds_run(run_dir):
                raise JobError(f"a run named {run_dir.name!r} already exists: choose another name")
            try:
                check_run_dir(run_dir)  # someone's folder of that name: the corpus is never staged into it
            except OutputError:
                raise JobError(
                    f"a folder named {run_dir.name!r} holds other files than a run's: choose another name"
                ) from None
            argv = training_command(run_dir, ["--config", str(preset), "--corpus", str(stage())], overrides)
            return launch(run_dir, argv, env, owner, lock)
        except BaseException:
            _unstage(run_dir, before, made=not existed)
            raise


def _unstage(run_dir: Path, before: set[str], made: bool) -> None:
    """Remove what a failed start wrote into ``run_dir`` (and the folder, if it ``made`` it and it is left empty)."""
    if not run_dir.is_dir():
        return
    for path in run_dir.iterdir():
        if path.name in before:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if made and not any(run_dir.iterdir()):
        run_dir.rmdir()


def resume(run_dir: Path, overrides: Sequence[str] = (), env: Mapping[str, str] | None = None, owner: str = "") -> int:
    """Continue a stopped or crashed run exactly from its last saved state; returns the PID."""
    if (run_dir / RESULT_FILE).exists():
        raise JobError(f"run {run_dir.name!r} has finished; start a new run to train more")
    if not os.path.lexists(run_dir / STATE_FILE):
        raise JobError(
            f"run {run_dir.name!r} has no saved training state yet (it is written at each evaluation); "
            "start a new run instead"
        )
    if not (run_dir / STATE_FILE).is_file():  # a FIFO or a folder there: said, never opened
        raise JobError(f"run {run_dir.name!r}: its {STATE_FILE} is not a regular file; move it away to resume")
    return launch(run_dir, training_command(run_dir, ["--resume"], overrides), env, owner)


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
    while pid_alive(found.pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop(run_dir: Path, owner: str = "", grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the job's process group, SIGKILL after ``grace_s``; False when nothing was running. Only the holder of
    ``run_dir``'s lock is signalled (never a copy's stale PID), only by its ``owner``; never a command-line run."""
    found = holder(run_dir)
    if found is None:
        return False
    if not found.owner or found.pid <= 0:
        raise JobError(f"run {run_dir.name!r} is written by {found.describe()}: stop it where it was started")
    if found.owner != owner_digest(owner):
        raise JobError(f"run {run_dir.name!r} was started by another session: only that session can stop it")
    record_event(run_dir, "stop", pid=found.pid)
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


def running_run(run_dirs: Iterable[Path]) -> Path | None:
    """Of ``run_dirs``, the one whose job of this app started last and still runs; None when none runs."""
    live = [(found.started, run_dir) for run_dir in run_dirs if (found := holder(run_dir)) is not None]
    return max(live, key=lambda item: item[0])[1] if live else None


def watched_runs(runs_dir: Path) -> tuple[list[str], list[str]]:
    """Run folders the Train page can show, and the symbolic links skipped (a run is a real folder)."""
    try:
        entries = list(runs_dir.iterdir()) if runs_dir.is_dir() else []
    except OSError:
        return [], []
    links = sorted(p.name for p in entries if p.is_symlink())
    found = [p for p in entries if not p.is_symlink() and p.is_dir() and RUN_NAME.fullmatch(p.name)]
    return sorted(p.name for p in found if holds_run(p) or (p / EVENTS_FILE).exists()), links


def log_tail(run_dir: Path, lines: int = 40, max_bytes: int = 64_000) -> str:
    """The last ``lines`` lines of train.log (progress-bar redraws split on carriage returns)."""
    try:
        text = read_bytes(run_dir / LOG_FILE, max_bytes, OSError, tail=True).decode("utf-8", errors="replace")
    except OSError:  # missing, or not a regular file (a FIFO there would block the page)
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
    events = read_jsonl(run_dir / EVENTS_FILE)
    starts = [i for i, e in enumerate(events) if e.get("event") == "start"]
    events = events[starts[-1] :] if starts else []  # the most recent job's
    exits = [e for e in events if e.get("event") == "exit"]
    code = exits[-1].get("returncode") if exits else None
    if any(e.get("event") == "stop" for e in events):
        state: State = "stopped"
    elif code is not None:  # exited on its own without a result: non-zero, or zero before metrics.json
        state = "crashed"
    else:  # ended while no process of this app watched it: the log tells
        state = "crashed" if log_shows_error(log_tail(run_dir)) else "stopped"
    return JobStatus(state, None, code, os.path.lexists(run_dir / STATE_FILE))  # Resume says what a FIFO there is
