"""Background training jobs: run names, the lock (one job per run, stale locks cleared), stop, status, and a real
tiny run started, stopped, resumed and finished through the same code the Train page uses."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import toy_pairs, write_tsv

from data.corpus import CleanConfig
from jobs import control
from jobs.corpus_check import CorpusSource, write_corpus
from jobs.launch import MAX_JOBS_ENV, live_runs
from jobs.run_progress import final_scores, latest_records, read_budget, read_metrics, run_progress
from lab.page.model_choices import find_models
from model.run_dir import JOB_LOG_FILE
from training import run_lock
from training.run_lock import holder, pid_alive
from translate.settings import RUNS_ENV

PYTHON = sys.executable
SLEEPER = [PYTHON, "-c", "import time; print('ready', flush=True); time.sleep(60)"]


def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` until true; fail (not hang) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A run directory; any job a test leaves running there is killed afterwards (by its PID only)."""
    path = tmp_path / "runs" / "job-1"
    yield path
    found = holder(path)
    if found is not None and found.pid not in (0, os.getpid()):
        os.killpg(found.pid, signal.SIGKILL)


def log_says(run_dir: Path, text: str) -> bool:
    return text in control.log_tail(run_dir)


# ----------------------------------------------------------------------------------------- names and presets


@pytest.mark.parametrize("name", ["my-run", "run_2", "A", "x" * 64])
def test_valid_run_names_stay_inside_the_runs_folder(tmp_path: Path, name: str) -> None:
    assert control.run_path(tmp_path, name) == (tmp_path / name).resolve()


@pytest.mark.parametrize("name", ["", " ", "../up", "a/b", "a b", ".hidden", "..", "x" * 65, "ñandú", "a.b", "/etc"])
def test_invalid_run_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(control.JobError, match="run name"):
        control.run_path(tmp_path, name)


def test_a_symlinked_run_name_cannot_escape_the_runs_folder(tmp_path: Path) -> None:
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    runs.mkdir()
    elsewhere.mkdir()
    (runs / "sneaky").symlink_to(elsewhere)
    with pytest.raises(control.JobError, match="outside the runs folder"):
        control.run_path(runs, "sneaky")
    (runs / "loop").symlink_to(runs / "loop")  # was a RuntimeError: a traceback on the Train page
    with pytest.raises(control.JobError, match="'loop' is a link to itself in the runs folder"):
        control.run_path(runs, "loop")


def test_runs_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert control.runs_folder({RUNS_ENV: str(tmp_path)}) == tmp_path.resolve()
    assert control.runs_folder({}) == control.runs_folder({RUNS_ENV: " "}) == (control.REPO_ROOT / "runs").resolve()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert control.runs_folder({RUNS_ENV: "~/runs/../runs"}) == (tmp_path / "home" / "runs").resolve()
    assert control.runs_folder({RUNS_ENV: "relative"}).is_absolute()


def test_presets_are_listed_smallest_first() -> None:
    presets = control.list_presets()
    assert presets[:2] == ["tiny", "small"]
    assert control.read_preset(control.CONFIGS_DIR / "tiny.toml").optim.max_steps > 0


def test_training_command_for_a_new_run_and_for_resume(tmp_path: Path) -> None:
    new = control.training_command(
        tmp_path, ["--config", "configs/tiny.toml", "--corpus", "c.tsv"], ["optim.max_epochs=3"]
    )
    assert new[1:3] == ["-m", "training.train"]
    assert new[-1] == "--optim.max_epochs=3" and "--resume" not in new
    assert "--resume" in control.training_command(tmp_path, ["--resume"])


# ----------------------------------------------------------------------------------------- lock, stop, status


OWNER = "session-token-1"


def test_second_start_is_refused_while_a_job_runs_then_stop_releases_the_lock(run_dir: Path) -> None:
    pid = control.launch(run_dir, SLEEPER, {"OMP_NUM_THREADS": "1"}, owner=OWNER)
    status = control.job_status(run_dir)
    assert (status.state, status.pid) == ("running", pid) and status.owned_by(OWNER)
    assert os.getpgid(pid) == pid  # its own session and process group: survives the page
    with pytest.raises(control.JobError, match="already training"):
        control.launch(run_dir, SLEEPER)
    with pytest.raises(control.JobError, match="already training"):
        control.start_staged(run_dir, Path("configs/tiny.toml"), lambda: Path("corpus.tsv"))
    wait_for(lambda: log_says(run_dir, "ready"), what="the sleeper's output in train.log")
    assert control.stop(run_dir, OWNER, grace_s=5) is True
    assert not pid_alive(pid)
    assert holder(run_dir) is None  # the OS released the lock with the process
    status = control.job_status(run_dir)
    assert status.state == "stopped" and not status.can_resume  # nothing saved to resume from
    assert control.stop(run_dir, OWNER) is False  # nothing left to stop


def test_only_the_session_that_started_a_job_can_stop_it(run_dir: Path) -> None:
    pid = control.launch(run_dir, SLEEPER, owner=OWNER)
    assert not control.job_status(run_dir).owned_by("another-session")
    with pytest.raises(control.JobError, match="another session"):
        control.stop(run_dir, "another-session", grace_s=1)
    with pytest.raises(control.JobError, match="another session"):
        control.stop(run_dir, "", grace_s=1)
    assert pid_alive(pid)
    assert control.stop(run_dir, OWNER, grace_s=5)


def test_the_server_runs_at_most_max_jobs_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    first = control.launch(runs / "one", SLEEPER, owner=OWNER)
    try:
        with pytest.raises(control.JobError, match=r"already run on this server \(one; LAB_MAX_JOBS=1\)"):
            control.launch(runs / "two", SLEEPER, owner=OWNER)
        assert not (runs / "two" / control.LOG_FILE).exists()  # nothing started
        monkeypatch.setenv(MAX_JOBS_ENV, "2")
        second = control.launch(runs / "two", SLEEPER, owner=OWNER)
        assert {p.name for p, _ in live_runs(runs)} == {"one", "two"}
        assert control.stop(runs / "two", OWNER, grace_s=5) and not pid_alive(second)
        monkeypatch.setenv(MAX_JOBS_ENV, "0")
        with pytest.raises(control.JobError, match="LAB_MAX_JOBS='0'"):
            control.launch(runs / "two", SLEEPER, owner=OWNER)
    finally:
        control.stop(runs / "one", OWNER, grace_s=5)
    assert not pid_alive(first)


def test_a_refused_start_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, preset = tmp_path / "runs", control.CONFIGS_DIR / "tiny.toml"
    corpus = CorpusSource(write_tsv(tmp_path / "toy.tsv", toy_pairs(60)))
    staged: list[Path] = []

    def stage(run_dir: Path) -> Callable[[], Path]:
        def write() -> Path:
            staged.append(write_corpus(corpus, CleanConfig(), run_dir))
            return staged[-1]

        return write

    first = control.launch(runs / "one", SLEEPER, owner=OWNER)
    try:
        for n in range(3):  # at the cap: refused before the corpus is written
            with pytest.raises(control.JobError, match="already run on this server"):
                control.start_staged(runs / f"flood-{n}", preset, stage(runs / f"flood-{n}"), owner=OWNER)
        assert not staged and sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == ["one"]
        # Another session took the last slot while this one wrote its corpus: the launch refuses, the corpus goes.
        full, checks = control.refuse_if_full, []

        def full_after_the_first_check(run_dir: Path) -> None:
            checks.append(run_dir)
            if len(checks) > 1:
                full(run_dir)

        monkeypatch.setattr(control, "refuse_if_full", full_after_the_first_check)
        with pytest.raises(control.JobError, match="already run on this server"):
            control.start_staged(runs / "late", preset, stage(runs / "late"), owner=OWNER)
        assert staged and not (runs / "late").exists()
        # A folder that was there keeps what it held and loses only what the failed start wrote.
        (runs / "kept").mkdir()
        (runs / "kept" / JOB_LOG_FILE).write_text("an earlier start's log", encoding="utf-8")
        checks.clear()
        with pytest.raises(control.JobError, match="already run on this server"):
            control.start_staged(runs / "kept", preset, stage(runs / "kept"), owner=OWNER)
        assert [p.name for p in (runs / "kept").iterdir()] == [JOB_LOG_FILE]
        # Someone's folder of that name is refused before anything is staged into it (its corpus was left there).
        (runs / "mine").mkdir()
        (runs / "mine" / "notes.txt").write_text("mine", encoding="utf-8")
        staged.clear()
        checks.clear()
        with pytest.raises(control.JobError, match="'mine' holds other files than a run's"):
            control.start_staged(runs / "mine", preset, stage(runs / "mine"), owner=OWNER)
        assert not staged and [p.name for p in (runs / "mine").iterdir()] == ["notes.txt"]
        assert [p for p in runs.iterdir() if p.name.startswith(".kept") or p.name.startswith(".late")] == []
    finally:
        control.stop(runs / "one", OWNER, grace_s=5)
    assert not pid_alive(first)


def test_a_start_refused_by_a_full_disk_leaves_no_lock_behind(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, found: run_lock.Holder) -> None:  # the holder's name does not fit on the disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(run_lock, "_write", full)
    with pytest.raises(OSError, match="No space left on device"):
        control.start_staged(run_dir, control.CONFIGS_DIR / "tiny.toml", lambda: Path("corpus.tsv"), owner=OWNER)
    assert not run_dir.exists()  # was: run.lock left in a folder of its own, and held by the page for good
    monkeypatch.undo()
    run_dir.mkdir(parents=True)
    run_lock.acquire(run_dir).release()  # free for the next Start


def test_a_failed_start_keeps_what_another_start_wrote_before_it_took_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, take = tmp_path / "runs" / "race", control.take_lock

    def another_start_first(folder: Path, owner: str = ""):  # the other Start wrote its log between check and lock
        folder.mkdir(parents=True, exist_ok=True)
        (folder / JOB_LOG_FILE).write_text("the other start's log", encoding="utf-8")
        return take(folder, owner)

    def failing_stage() -> Path:
        (run_dir / "corpus.tsv").write_text("a\tb\n", encoding="utf-8")
        raise OSError("disk full")

    monkeypatch.setattr(control, "take_lock", another_start_first)
    with pytest.raises(OSError, match="disk full"):
        control.start_staged(run_dir, control.CONFIGS_DIR / "tiny.toml", failing_stage, owner=OWNER)
    assert [p.name for p in run_dir.iterdir()] == [JOB_LOG_FILE]


def test_a_second_start_of_the_same_run_never_replaces_the_corpus_of_the_first(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preset, staged, refusals = control.CONFIGS_DIR / "tiny.toml", [], []
    mine, theirs = write_tsv(tmp_path / "mine.tsv", toy_pairs(60)), write_tsv(tmp_path / "theirs.tsv", toy_pairs(90, 1))
    monkeypatch.setattr(control, "training_command", lambda *args: SLEEPER)  # a job that holds the lock, no training

    def stage(corpus: Path, meanwhile: Callable[[], None] = lambda: None) -> Callable[[], Path]:
        def write() -> Path:
            staged.append(corpus.name)
            written = write_corpus(CorpusSource(corpus), CleanConfig(), run_dir)
            meanwhile()
            return written

        return write

    def other_session_starts() -> None:
        try:
            control.start_staged(run_dir, preset, stage(theirs), owner="another tab")
        except control.JobError as err:
            refusals.append(str(err))

    # The other session presses Start while this one stages its corpus, and once more after it started.
    pid = control.start_staged(run_dir, preset, stage(mine, other_session_starts), owner=OWNER)
    expected = write_corpus(CorpusSource(mine), CleanConfig(), tmp_path / "expected").read_bytes()
    other_session_starts()
    assert staged == ["mine.tsv"] and len(refusals) == 2 and all("already training" in r for r in refusals)
    assert (run_dir / "corpus.tsv").read_bytes() == expected
    control.stop(run_dir, OWNER, grace_s=5)
    assert not pid_alive(pid)


def test_stop_kills_the_whole_process_group_and_escalates_to_sigkill(run_dir: Path, tmp_path: Path) -> None:
    child_pid_file = tmp_path / "grandchild.pid"
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # a job that ignores SIGTERM: needs the SIGKILL
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child_pid_file)!r}, 'w').write(str(p.pid))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    pid = control.launch(run_dir, [PYTHON, "-c", script], owner=OWNER)
    wait_for(lambda: log_says(run_dir, "ready") and child_pid_file.exists(), what="the job and its child")
    grandchild = int(child_pid_file.read_text())
    start = time.monotonic()
    assert control.stop(run_dir, OWNER, grace_s=0.5)
    assert time.monotonic() - start < 10
    wait_for(lambda: not pid_alive(pid) and not pid_alive(grandchild), what="the group to die")
    events = [json.loads(line)["event"] for line in (run_dir / control.EVENTS_FILE).read_text().splitlines()]
    wait_for(lambda: "exit" in (run_dir / control.EVENTS_FILE).read_text(), what="the exit event")
    assert events[:2] == ["start", "stop"]


def test_a_lock_file_nobody_holds_is_no_job_whatever_it_says(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    me = os.getpid()
    claims = [
        {"run_dir": str(run_dir.resolve()), "pid": me, "started": 0},
        {"pid": 1},  # not ours
        '{"pid": ',  # cut short by a crash
    ]
    for claim in claims:
        (run_dir / run_lock.LOCK_FILE).write_text(claim if isinstance(claim, str) else json.dumps(claim))
        assert holder(run_dir) is None and control.job_status(run_dir).state != "running"
        assert control.stop(run_dir, OWNER) is False
    pid = control.launch(run_dir, SLEEPER, owner=OWNER)  # a start takes such a file over
    assert holder(run_dir).pid == pid
    control.stop(run_dir, OWNER, grace_s=5)


def test_a_copied_run_folder_is_not_running_and_stop_on_it_leaves_the_original_alone(
    run_dir: Path, tmp_path: Path
) -> None:
    pid = control.launch(run_dir, SLEEPER, owner=OWNER)
    wait_for(lambda: log_says(run_dir, "ready"), what="the sleeper")
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(run_dir, copy)
    assert json.loads((copy / run_lock.LOCK_FILE).read_text())["pid"] == pid  # the copy names the original's PID
    assert holder(copy) is None and control.job_status(copy).state != "running"
    assert control.stop(copy, OWNER) is False
    assert pid_alive(pid) and holder(run_dir).pid == pid
    control.stop(run_dir, OWNER, grace_s=5)


def test_the_lock_dies_with_its_holder_even_on_kill_9(run_dir: Path) -> None:
    script = (
        "import sys, time; from training.run_lock import acquire; "
        f"lock = acquire(__import__('pathlib').Path({str(run_dir)!r})); print('held', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, text=True, cwd=control.REPO_ROOT)
    assert proc.stdout.readline().strip() == "held"
    found = holder(run_dir)
    assert found is not None and found.pid == proc.pid and not found.owner
    proc.kill()
    proc.wait()
    assert holder(run_dir) is None
    with run_lock.acquire(run_dir) as lock:
        assert lock.holder.pid == os.getpid()


def test_the_running_run_is_the_live_job_started_last(tmp_path: Path) -> None:
    for name in ("old", "new", "idle"):
        (tmp_path / name).mkdir()
    (tmp_path / "idle" / run_lock.LOCK_FILE).write_text("{}")
    with run_lock.acquire(tmp_path / "old"):
        time.sleep(0.02)
        with run_lock.acquire(tmp_path / "new"):
            assert control.running_run(tmp_path / name for name in ("old", "new", "idle")) == tmp_path / "new"
    assert control.running_run([tmp_path / "old", tmp_path / "idle"]) is None


RACER = """
import os, sys, time
from pathlib import Path
from training.run_lock import RunLocked, acquire
run_dir, log, tries = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
while not os.path.exists(log + ".go"):
    time.sleep(0.001)
got = 0
for _ in range(tries):
    try:
        lock = acquire(run_dir)
    except RunLocked:
        continue
    with open(log, "a") as f:
        f.write(f"enter {os.getpid()}\\n")
    time.sleep(0.0005)
    with open(log, "a") as f:
        f.write(f"leave {os.getpid()}\\n")
    lock.release()
    got += 1
print(got)
"""


@pytest.mark.parametrize("attempt", range(10))
def test_simultaneous_takers_never_hold_one_run_twice(tmp_path: Path, attempt: int) -> None:
    run_dir, log = tmp_path / "runs" / "race", tmp_path / "holders.log"
    racers = [
        subprocess.Popen(
            [PYTHON, "-c", RACER, str(run_dir), str(log), "40"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=control.REPO_ROOT,
        )
        for _ in range(6)
    ]
    time.sleep(0.3)
    Path(f"{log}.go").touch()  # 6 processes × 40 tries = 240 tries, all at once
    got = sum(int(p.communicate(timeout=60)[0]) for p in racers)
    lines = log.read_text().splitlines()
    assert got >= 1 and len(lines) == 2 * got
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):  # strictly one holder at a time
        assert enter.split()[0] == "enter" and leave == f"leave {enter.split()[1]}"


def test_a_crashed_job_reports_its_exit_code_and_log(run_dir: Path) -> None:
    control.launch(run_dir, [PYTHON, "-c", "raise RuntimeError('the corpus exploded')"])
    wait_for(lambda: control.job_status(run_dir).state != "running", what="the job to end")
    wait_for(lambda: control.job_status(run_dir).returncode is not None, what="the exit code")
    status = control.job_status(run_dir)
    assert status.state == "crashed" and status.returncode == 1
    tail = control.log_tail(run_dir)
    assert "RuntimeError: the corpus exploded" in tail and control.log_shows_error(tail)


def test_a_job_that_ended_unwatched_is_judged_by_its_log(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "train_config.json").write_text("{}")
    (run_dir / control.EVENTS_FILE).write_text(json.dumps({"event": "start", "pid": 1}) + "\n")
    (run_dir / control.LOG_FILE).write_text("training:  10%|#   | 5/50\rtraining:  12%|#   | 6/50\n")
    assert control.job_status(run_dir).state == "stopped"
    assert control.log_tail(run_dir).splitlines() == ["training:  10%|#   | 5/50", "training:  12%|#   | 6/50"]
    with open(run_dir / control.LOG_FILE, "a") as f:
        f.write("Traceback (most recent call last):\n  ...\nMemoryError: out of memory\n")
    assert control.job_status(run_dir).state == "crashed"


def test_resume_needs_saved_state_and_an_unfinished_run(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    with pytest.raises(control.JobError, match="no saved training state"):
        control.resume(run_dir)
    os.mkfifo(run_dir / control.STATE_FILE)  # was "no saved training state yet"
    with pytest.raises(control.JobError, match=r"its train_state\.pt is not a regular file; move it away to resume"):
        control.resume(run_dir)
    (run_dir / control.RESULT_FILE).write_text("{}")
    with pytest.raises(control.JobError, match="has finished"):
        control.resume(run_dir)
    with pytest.raises(control.JobError, match="already exists"):
        control.start_staged(run_dir, Path("configs/tiny.toml"), lambda: Path("corpus.tsv"))


def test_a_training_process_started_elsewhere_is_seen_and_left_alone(run_dir: Path) -> None:
    script = (
        "import time; from pathlib import Path; from training.run_lock import acquire; "
        f"lock = acquire(Path({str(run_dir)!r})); print('held', flush=True); time.sleep(60)"
    )
    outside = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, text=True, cwd=control.REPO_ROOT)
    try:
        assert outside.stdout.readline().strip() == "held"
        assert control.job_status(run_dir) == control.JobStatus("external", outside.pid)
        with pytest.raises(control.JobError, match="command-line run"):
            control.launch(run_dir, SLEEPER)
        with pytest.raises(control.JobError, match="stop it where it was started"):
            control.stop(run_dir, OWNER)  # not ours: never signalled
        assert outside.poll() is None
    finally:
        outside.kill()
        outside.wait()


# ----------------------------------------------------------------------------------------- a real tiny run


@pytest.mark.slow
def test_tiny_job_starts_reports_progress_stops_resumes_and_appears_in_the_picker(
    tmp_path: Path, toy_corpus: Path
) -> None:
    runs = tmp_path / "runs"
    run_dir = control.run_path(runs, "tiny-job")
    corpus = write_corpus(CorpusSource(toy_corpus), CleanConfig(), run_dir)  # what the page does at Start
    overrides = ["data.format=tsv", "optim.max_steps=400", "run.eval_every=50", "run.log_every=10"]
    env = {"OMP_NUM_THREADS": "1"}
    pid = control.start_staged(run_dir, control.CONFIGS_DIR / "tiny.toml", lambda: corpus, overrides, env, OWNER)
    try:
        wait_for(lambda: (run_dir / control.STATE_FILE).exists(), 60, "the first saved state")
        with pytest.raises(control.JobError, match="already training"):
            control.resume(run_dir, env=env, owner=OWNER)
        progress = run_progress(read_metrics(run_dir), read_budget(run_dir))
        assert progress is not None and 0 < progress.step < 400 and 0 < progress.fraction < 1
        assert progress.tokens_per_s and progress.tokens_per_s > 0
        assert control.stop(run_dir, OWNER)
        stopped = control.job_status(run_dir)
        assert stopped.state == "stopped" and stopped.can_resume and not (run_dir / control.RESULT_FILE).exists()

        pid = control.resume(run_dir, env=env, owner="another-session")  # resume is open to every session
        wait_for(lambda: control.job_status(run_dir).state != "running", 90, "the resumed run to finish")
        assert control.job_status(run_dir).state == "finished", control.log_tail(run_dir)
    finally:
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
    scores = final_scores(run_dir)
    assert scores is not None and 0 <= scores["bleu"] <= 100 and scores["bleu_signature"].startswith("nrefs")
    records = latest_records(read_metrics(run_dir))
    train_steps = [r["step"] for r in records if r["kind"] == "train"]
    assert train_steps == sorted(set(train_steps)) and train_steps[-1] == 400  # one record per step, to the end
    assert "--resume" in (run_dir / control.LOG_FILE).read_text()
    choices = find_models(tmp_path / "no-default", runs)
    assert [c.path for c in choices if c.available] == [run_dir]
