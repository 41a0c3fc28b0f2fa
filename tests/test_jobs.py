"""Background training jobs: run names, the lock (one job per run, stale locks cleared), stop, status, and a real
tiny run started, stopped, resumed and finished through the same code the Train page uses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from data.corpus import CleanConfig
from lab.models import find_models
from model.run_dir import RUNS_ENV
from training_jobs import job_lock, jobs
from training_jobs.corpus_check import CorpusSource, write_corpus
from training_jobs.run_progress import final_scores, latest_records, read_budget, read_metrics, run_progress

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
    lock = job_lock.read_lock(path)
    if lock is not None and lock.pid != os.getpid() and job_lock.pid_alive(lock.pid, lock.start_time):
        os.killpg(lock.pid, signal.SIGKILL)


def log_says(run_dir: Path, text: str) -> bool:
    return text in jobs.log_tail(run_dir)


# ----------------------------------------------------------------------------------------- names and presets


@pytest.mark.parametrize("name", ["my-run", "run_2", "A", "x" * 64])
def test_valid_run_names_stay_inside_the_runs_folder(tmp_path: Path, name: str) -> None:
    assert jobs.run_path(tmp_path, name) == (tmp_path / name).resolve()


@pytest.mark.parametrize("name", ["", " ", "../up", "a/b", "a b", ".hidden", "..", "x" * 65, "ñandú", "a.b", "/etc"])
def test_invalid_run_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(jobs.JobError, match="run name"):
        jobs.run_path(tmp_path, name)


def test_a_symlinked_run_name_cannot_escape_the_runs_folder(tmp_path: Path) -> None:
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    runs.mkdir()
    elsewhere.mkdir()
    (runs / "sneaky").symlink_to(elsewhere)
    with pytest.raises(jobs.JobError, match="outside the runs folder"):
        jobs.run_path(runs, "sneaky")


def test_runs_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert jobs.runs_folder({RUNS_ENV: str(tmp_path)}) == tmp_path.resolve()
    assert jobs.runs_folder({}) == jobs.runs_folder({RUNS_ENV: " "}) == (jobs.REPO_ROOT / "runs").resolve()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert jobs.runs_folder({RUNS_ENV: "~/runs/../runs"}) == (tmp_path / "home" / "runs").resolve()
    assert jobs.runs_folder({RUNS_ENV: "relative"}).is_absolute()


def test_presets_are_listed_smallest_first() -> None:
    presets = jobs.list_presets()
    assert presets[:2] == ["tiny", "small"]
    assert jobs.read_preset(jobs.CONFIGS_DIR / "tiny.toml")["optim"]["max_steps"] > 0


def test_training_command_for_a_new_run_and_for_resume(tmp_path: Path) -> None:
    new = jobs.training_command(tmp_path, Path("configs/tiny.toml"), Path("c.tsv"), ["optim.max_epochs=3"])
    assert new[1:3] == ["-m", "training.train"]
    assert new[-1] == "--optim.max_epochs=3" and "--resume" not in new
    assert "--resume" in jobs.training_command(tmp_path, resume=True)
    with pytest.raises(jobs.JobError):
        jobs.training_command(tmp_path)


# ----------------------------------------------------------------------------------------- lock, stop, status


def test_second_start_is_refused_while_a_job_runs_then_stop_releases_the_lock(run_dir: Path) -> None:
    pid = jobs.launch(run_dir, SLEEPER, {"OMP_NUM_THREADS": "1"})
    assert jobs.job_status(run_dir) == jobs.JobStatus("running", pid)
    assert os.getpgid(pid) == pid  # its own session and process group: survives the page
    with pytest.raises(jobs.JobError, match="already training"):
        jobs.launch(run_dir, SLEEPER)
    with pytest.raises(jobs.JobError, match="already training"):
        jobs.start(run_dir, Path("configs/tiny.toml"), Path("corpus.tsv"))
    wait_for(lambda: log_says(run_dir, "ready"), what="the sleeper's output in train.log")
    assert jobs.stop(run_dir, grace_s=5) is True
    assert not job_lock.pid_alive(pid)
    assert not (run_dir / job_lock.LOCK_FILE).exists()
    status = jobs.job_status(run_dir)
    assert status.state == "stopped" and not status.can_resume  # nothing saved to resume from
    assert jobs.stop(run_dir) is False  # nothing left to stop


def test_the_job_gets_a_friendly_environment_and_its_output_goes_to_the_log(run_dir: Path) -> None:
    script = "import os; print('policy', os.environ['OMP_WAIT_POLICY'], os.environ['OMP_NUM_THREADS'], os.getcwd())"
    jobs.launch(run_dir, [PYTHON, "-c", script], {"OMP_NUM_THREADS": "1"})
    wait_for(lambda: jobs.job_status(run_dir).returncode is not None, what="the job to end")
    assert f"policy PASSIVE 1 {jobs.REPO_ROOT}" in jobs.log_tail(run_dir)
    assert jobs.job_status(run_dir).state == "crashed"  # exit code 0 but no metrics.json: not a finished run


def test_the_job_preloads_tcmalloc_only_when_it_is_installed(tmp_path: Path) -> None:
    tcmalloc, missing = tmp_path / "libtcmalloc_minimal.so.4", tmp_path / "missing.so"
    tcmalloc.write_bytes(b"")
    assert jobs.child_environment({}, {}, tcmalloc)[jobs.PRELOAD_ENV] == str(tcmalloc)
    assert jobs.PRELOAD_ENV not in jobs.child_environment({}, {}, missing)
    parent = {jobs.PRELOAD_ENV: f"{missing} libbare.so:{tcmalloc}", "KEEP": "1"}  # a missing file is dropped
    env = jobs.child_environment({"OMP_NUM_THREADS": "1"}, parent, tcmalloc)
    assert env[jobs.PRELOAD_ENV].split() == ["libbare.so", str(tcmalloc)]  # bare names: ld.so searches for them
    assert env["KEEP"] == "1" and env["OMP_NUM_THREADS"] == "1" and env["OMP_WAIT_POLICY"] == "PASSIVE"


def test_a_missing_preload_never_reaches_the_job(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LD_PRELOAD", str(tmp_path / "libtcmalloc_minimal.so.4"))  # copied from a recipe, absent
    script = "import os; print('preload', os.environ.get('LD_PRELOAD'))"
    jobs.launch(run_dir, [PYTHON, "-c", script], {"OMP_NUM_THREADS": "1"})
    wait_for(lambda: jobs.job_status(run_dir).returncode is not None, what="the job to end")
    tail = jobs.log_tail(run_dir)
    assert "ld.so" not in tail and "cannot be preloaded" not in tail
    assert f"preload {jobs.TCMALLOC if jobs.TCMALLOC.exists() else None}" in tail


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
    pid = jobs.launch(run_dir, [PYTHON, "-c", script])
    wait_for(lambda: log_says(run_dir, "ready") and child_pid_file.exists(), what="the job and its child")
    grandchild = int(child_pid_file.read_text())
    start = time.monotonic()
    assert jobs.stop(run_dir, grace_s=0.5)
    assert time.monotonic() - start < 10
    wait_for(lambda: not job_lock.pid_alive(pid) and not job_lock.pid_alive(grandchild), what="the group to die")
    events = [json.loads(line)["event"] for line in (run_dir / jobs.EVENTS_FILE).read_text().splitlines()]
    wait_for(lambda: "exit" in (run_dir / jobs.EVENTS_FILE).read_text(), what="the exit event")
    assert events[:2] == ["start", "stop"]


def test_a_stale_lock_from_a_dead_process_is_detected_and_cleared(run_dir: Path) -> None:
    dead = subprocess.Popen([PYTHON, "-c", "pass"])
    dead.wait()
    run_dir.mkdir(parents=True)
    (run_dir / job_lock.LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "start_time": None, "started": 0}))
    assert job_lock.live_lock(run_dir) is None
    assert not (run_dir / job_lock.LOCK_FILE).exists()
    (run_dir / job_lock.LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "started": 0}))
    pid = jobs.launch(run_dir, SLEEPER)  # a start clears the stale lock by itself
    assert job_lock.read_lock(run_dir).pid == pid
    jobs.stop(run_dir, grace_s=5)


def test_a_lock_naming_a_reused_pid_or_garbage_is_stale(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    start_time = job_lock.process_start_time(os.getpid())
    if start_time is None:
        pytest.skip("no /proc: PID reuse cannot be told apart")
    lock = {"pid": os.getpid(), "start_time": start_time + 1, "started": 0}  # same PID, another process
    (run_dir / job_lock.LOCK_FILE).write_text(json.dumps(lock))
    assert job_lock.live_lock(run_dir) is None
    (run_dir / job_lock.LOCK_FILE).write_text('{"pid": ')  # cut short by a crash
    assert job_lock.live_lock(run_dir) is None and not (run_dir / job_lock.LOCK_FILE).exists()


def test_the_running_run_is_the_live_job_started_last(tmp_path: Path) -> None:
    dead = subprocess.Popen([PYTHON, "-c", "pass"])
    dead.wait()
    me, start_time = os.getpid(), job_lock.process_start_time(os.getpid())
    locks = {"old": (me, 100.0), "new": (me, 200.0), "dead": (dead.pid, 300.0), "idle": None}
    for name, lock in locks.items():
        (tmp_path / name).mkdir()
        if lock is not None:
            data = {"pid": lock[0], "start_time": start_time if lock[0] == me else None, "started": lock[1]}
            (tmp_path / name / job_lock.LOCK_FILE).write_text(json.dumps(data))
    assert jobs.running_run(tmp_path / name for name in locks) == tmp_path / "new"
    assert jobs.running_run([tmp_path / "dead", tmp_path / "idle"]) is None


def test_a_crashed_job_reports_its_exit_code_and_log(run_dir: Path) -> None:
    jobs.launch(run_dir, [PYTHON, "-c", "raise RuntimeError('the corpus exploded')"])
    wait_for(lambda: jobs.job_status(run_dir).state != "running", what="the job to end")
    wait_for(lambda: jobs.job_status(run_dir).returncode is not None, what="the exit code")
    status = jobs.job_status(run_dir)
    assert status.state == "crashed" and status.returncode == 1
    tail = jobs.log_tail(run_dir)
    assert "RuntimeError: the corpus exploded" in tail and jobs.log_shows_error(tail)


def test_a_job_that_ended_unwatched_is_judged_by_its_log(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "train_config.json").write_text("{}")
    (run_dir / jobs.EVENTS_FILE).write_text(json.dumps({"event": "start", "pid": 1}) + "\n")
    (run_dir / jobs.LOG_FILE).write_text("training:  10%|#   | 5/50\rtraining:  12%|#   | 6/50\n")
    assert jobs.job_status(run_dir).state == "stopped"
    assert jobs.log_tail(run_dir).splitlines() == ["training:  10%|#   | 5/50", "training:  12%|#   | 6/50"]
    with open(run_dir / jobs.LOG_FILE, "a") as f:
        f.write("Traceback (most recent call last):\n  ...\nMemoryError: out of memory\n")
    assert jobs.job_status(run_dir).state == "crashed"


def test_resume_needs_saved_state_and_an_unfinished_run(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    with pytest.raises(jobs.JobError, match="no saved training state"):
        jobs.resume(run_dir)
    (run_dir / jobs.RESULT_FILE).write_text("{}")
    with pytest.raises(jobs.JobError, match="has finished"):
        jobs.resume(run_dir)
    with pytest.raises(jobs.JobError, match="already exists"):
        jobs.start(run_dir, Path("configs/tiny.toml"), Path("corpus.tsv"))


def test_a_training_process_started_elsewhere_is_seen_and_left_alone(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    argv = [PYTHON, "-c", "import time; time.sleep(60)", "-m", "training.train", "--out", str(run_dir)]
    outside = subprocess.Popen(argv)
    try:
        wait_for(lambda: job_lock.external_pids(run_dir) == [outside.pid], what="the /proc scan")
        assert jobs.job_status(run_dir) == jobs.JobStatus("external", outside.pid)
        with pytest.raises(jobs.JobError, match="outside the app"):
            jobs.launch(run_dir, SLEEPER)
        assert jobs.stop(run_dir) is False  # not ours: never signalled
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
    run_dir = jobs.run_path(runs, "tiny-job")
    corpus = write_corpus(CorpusSource(toy_corpus), CleanConfig(), run_dir)  # what the page does at Start
    overrides = ["data.format=tsv", "optim.max_steps=400", "run.eval_every=50", "run.log_every=10"]
    env = {"OMP_NUM_THREADS": "1"}
    pid = jobs.start(run_dir, jobs.CONFIGS_DIR / "tiny.toml", corpus, overrides, env)
    try:
        wait_for(lambda: (run_dir / jobs.STATE_FILE).exists(), 60, "the first saved state")
        with pytest.raises(jobs.JobError, match="already training"):
            jobs.resume(run_dir, env=env)
        progress = run_progress(read_metrics(run_dir), read_budget(run_dir))
        assert progress is not None and 0 < progress.step < 400 and 0 < progress.fraction < 1
        assert progress.tokens_per_s and progress.tokens_per_s > 0
        assert jobs.stop(run_dir)
        stopped = jobs.job_status(run_dir)
        assert stopped.state == "stopped" and stopped.can_resume and not (run_dir / jobs.RESULT_FILE).exists()

        pid = jobs.resume(run_dir, env=env)
        wait_for(lambda: jobs.job_status(run_dir).state != "running", 90, "the resumed run to finish")
        assert jobs.job_status(run_dir).state == "finished", jobs.log_tail(run_dir)
    finally:
        if job_lock.pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
    scores = final_scores(run_dir)
    assert scores is not None and 0 <= scores["bleu"] <= 100 and scores["bleu_signature"].startswith("nrefs")
    records = latest_records(read_metrics(run_dir))
    train_steps = [r["step"] for r in records if r["kind"] == "train"]
    assert train_steps == sorted(set(train_steps)) and train_steps[-1] == 400  # one record per step, to the end
    assert "--resume" in (run_dir / jobs.LOG_FILE).read_text()
    choices = find_models(tmp_path / "no-default", runs)
    assert [c.path for c in choices if c.available] == [run_dir]
