"""The Train page with Streamlit's AppTest: uploads, validation, run names, and runs in every state."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import browser_page, idle, raw_words, shown_texts
from streamlit.config import ShowErrorDetailsConfigOptions
from streamlit.testing.v1 import AppTest

from jobs import control
from model.config import ModelConfig
from model.run_dir import METRICS_LOG_FILE
from training.metrics import MetricsLog
from training.run_lock import holder, pid_alive
from translate.settings import REPO_ROOT, RUNS_ENV
from workshop.bench.app_server import CHROMIUM, running_app

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "1_Train.py")
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def tsv(n: int) -> bytes:
    return "".join(f"El perro {i} corre.\tThe dog {i} runs.\n" for i in range(n)).encode()


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runs folder for the page; jobs left running there are killed afterwards (by PID)."""
    folder = tmp_path / "runs"
    monkeypatch.setenv(RUNS_ENV, str(folder))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("LAB_MAX_UPLOAD_MB", raising=False)
    yield folder
    for run_dir in folder.glob("*"):
        found = holder(run_dir) if run_dir.is_dir() else None
        if found is not None and found.pid not in (0, os.getpid()):
            os.killpg(found.pid, signal.SIGKILL)


TAB = "browser-tab-1"  # the page's owner token in these tests


def page(tab: str = TAB) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.session_state["owner_token"] = tab
    at.run()
    assert not at.exception
    return at


def upload(at: AppTest, name: str, content: bytes, key: str = "upload") -> AppTest:
    at.file_uploader(key=key).upload(name, content)
    at.run()
    assert not at.exception
    return at


def errors(at: AppTest) -> str:
    return "\n".join(e.value for e in at.error)


def details(at: AppTest) -> str:
    """The text of every "Details" expander: where a refusal's technical words go."""
    return "\n".join(c.value for e in at.expander if e.label == "Details" for c in e.code)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def start_disabled_because(at: AppTest) -> str:
    assert at.button(key="start").disabled
    return next(c.value for c in at.caption if c.value.startswith("Start is disabled"))


def fake_network(folder: Path) -> None:
    """What the picker looks for, never loaded here: a config.json it accepts and a weights file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(ModelConfig(src_vocab_size=8, tgt_vocab_size=8).to_json())
    (folder / "model.safetensors").write_text("{}")


def test_nothing_chosen_yet_start_is_disabled(runs: Path) -> None:
    at = page()
    assert "choose a corpus first" in start_disabled_because(at)
    assert not at.error


def test_a_valid_upload_shows_the_report_and_enables_start(runs: Path) -> None:
    at = upload(page(), "my corpus (es-en).tsv", tsv(60) + b"sin tab\n")
    assert not at.error
    assert metric(at, "Pairs read") == "61" and metric(at, "Pairs kept") == "60" and metric(at, "Skipped") == "1"
    tables = [t.value for t in at.dataframe]
    skipped = tables[0]
    assert skipped["reason"].tolist() == ["wrong number of fields"]
    assert skipped["examples (file:line)"][0] == "my corpus (es-en).tsv:61"  # the name the user knows
    assert any("source (Spanish)" in t.columns for t in tables)  # sample pairs, named by the chosen language
    assert not at.button(key="start").disabled
    assert list(runs.glob(".uploads/*/my_corpus_es-en_.tsv"))  # stored under a sanitised name


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.tsv", b"", "file is empty"),
        ("binary.tsv", bytes(range(128, 256)) * 50 + b"\n" + bytes(range(128, 256)) * 50, "could not be read"),
        ("one-column.tsv", "".join(f"Solo una columna {i}.\n" for i in range(30)).encode(), "could not be read"),
        ("few.tsv", tsv(4), "only 4 usable pairs"),
        ("one-column.csv", b"text\n" + b"".join(b"x%d\n" % i for i in range(30)), "header must name"),
    ],
)
def test_each_bad_upload_shows_its_reason_and_disables_start(
    runs: Path, name: str, content: bytes, message: str
) -> None:
    at = upload(page(), name, content)
    assert message in errors(at)
    assert "failed validation" in start_disabled_because(at)


def test_an_upload_over_the_limit_is_refused_with_a_clear_message(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_MAX_UPLOAD_MB", "1")
    at = upload(page(), "big.tsv", tsv(30_000))  # about 1.1 MB
    assert "over the 1 MB limit" in errors(at) and "LAB_MAX_UPLOAD_MB" in errors(at)
    assert "choose a corpus first" in start_disabled_because(at)
    assert not list(runs.glob(".uploads/*/big.tsv"))  # never written to disk


def test_chosen_columns_decide_source_and_target(runs: Path) -> None:
    content = "".join(f"{i}\tThe dog {i} runs.\tEl perro {i} corre.\n" for i in range(30)).encode()
    at = upload(page(), "three.tsv", content)
    assert "could not be read" not in errors(at)  # columns 1 and 2 hold the id and English: wrong, but readable
    at.selectbox(key="src_column").set_value(2)
    at.selectbox(key="tgt_column").set_value(1)
    at.run()
    sample = at.dataframe[-1].value
    assert sample.iloc[0].tolist() == ["El perro 0 corre.", "The dog 0 runs."]
    at.selectbox(key="tgt_column").set_value(2)
    at.run()
    assert "two different columns" in errors(at)
    assert at.button(key="start").disabled


def test_csv_columns_chosen_by_header(runs: Path) -> None:
    content = b"id,text_en,text_es\n" + b"".join(b"%d,Hello %d,Hola %d\n" % (i, i, i) for i in range(30))
    at = upload(page(), "c.csv", content)
    at.selectbox(key="src_column").set_value(2)
    at.selectbox(key="tgt_column").set_value(1)
    at.run()
    assert not at.error and metric(at, "Pairs kept") == "30"
    assert at.dataframe[-1].value.iloc[0].tolist() == ["Hola 0", "Hello 0"]


def test_a_pair_of_line_aligned_files(runs: Path) -> None:
    at = page()
    at.radio(key="source_kind").set_value("Upload a pair of line-aligned files").run()
    at.file_uploader(key="upload_src").upload("train.es", b"".join(b"Hola %d.\n" % i for i in range(30)))
    upload(at, "train.en", b"".join(b"Hello %d.\n" % i for i in range(29)), key="upload_tgt")
    assert "train.es has 30 lines but train.en has 29" in errors(at)
    assert at.button(key="start").disabled
    aligned = b"".join(b"Hello %d.\n" % i for i in range(30))
    at.file_uploader(key="upload_tgt").set_value(("train.en", aligned, "text/plain")).run()
    assert not at.error and metric(at, "Pairs kept") == "30" and not at.button(key="start").disabled


def server_file(at: AppTest, path: str) -> AppTest:
    at.radio(key="source_kind").set_value("A file on the server").run()
    at.text_input(key="server_path").set_value(path).run()
    assert not at.exception
    return at


def test_a_file_on_the_server(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "server.tsv").write_bytes(tsv(30))
    monkeypatch.setenv("LAB_CORPUS_DIRS", os.pathsep.join([str(tmp_path / "other"), str(corpora)]))
    at = server_file(page(), str(corpora / "missing.tsv"))
    assert "file not found" in errors(at) and at.button(key="start").disabled
    at.text_input(key="server_path").set_value(str(corpora)).run()
    assert "is a folder" in errors(at)
    at.text_input(key="server_path").set_value(str(corpora / "server.tsv")).run()
    assert not at.error and metric(at, "Pairs kept") == "30" and not at.button(key="start").disabled


def test_the_server_path_is_read_only_inside_the_allowed_folders(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "outside.tsv").write_bytes(tsv(30))
    (data / "link.tsv").symlink_to(tmp_path / "outside.tsv")
    monkeypatch.setenv("LAB_CORPUS_DIRS", str(data))
    at = server_file(page(), "/etc/passwd")
    relative = os.path.relpath(data, REPO_ROOT)  # named as the page names paths: from the repository
    for path in ("/etc/passwd", f"{data}/../outside.tsv", str(data / "link.tsv")):
        at.text_input(key="server_path").set_value(path).run()
        assert errors(at).startswith(path) and f"the Train page may read: {relative}. " in errors(at)
        assert not any(m.label == "Pairs read" for m in at.metric)  # never opened
        assert "choose a corpus first" in start_disabled_because(at)


def test_no_visitor_reads_a_run_folder_or_sees_a_server_path(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    someone = runs / "someone"
    (someone / "splits").mkdir(parents=True)
    for name in ("corpus.tsv", "splits/test.tsv"):
        (someone / name).write_bytes(tsv(30))
    at = server_file(page(), str(someone / "corpus.tsv"))
    allowed = next(c.value for c in at.caption if c.value.startswith("Allowed folders"))
    assert (
        allowed
        == "Allowed folders (LAB_CORPUS_DIRS): `data`, `../shared/data`. Relative paths start at the repository."
    )
    monkeypatch.setenv("LAB_CORPUS_DIRS", str(runs.parent))  # even a corpus folder that holds the runs folder
    at = server_file(page(), str(someone / "corpus.tsv"))
    for path in (someone / "corpus.tsv", someone / "splits" / "test.tsv", runs / ".uploads" / "x.tsv"):
        at.text_input(key="server_path").set_value(str(path)).run()
        assert (
            errors(at)
            == f"{path} is in the runs folder, whose corpora belong to the runs that made them: never read here"
        )
        assert not any(m.label == "Pairs read" for m in at.metric)
    shown = shown_texts(page())
    for server_path in (REPO_ROOT, runs):  # the page names folders from the repository: "runs", "data"
        assert not any(re.search(rf"(?<![\w.]){re.escape(str(server_path))}", text) for text in shown)


def test_an_exception_box_shows_its_type_only() -> None:
    """A traceback names the server's files: the app shows an uncaught exception's type, the log keeps the rest."""
    settings = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert settings["client"]["showErrorDetails"] == ShowErrorDetailsConfigOptions.TYPE


def test_a_long_server_path_is_quoted_short(runs: Path) -> None:
    path = "/x" * 2500  # 5,000 characters
    at = server_file(page(), path)
    assert errors(at).startswith(path[:200] + "…") and len(errors(at)) < 400


@pytest.mark.parametrize("name", ["../escape", "has space", "a/b", ".hidden", ""])
def test_an_invalid_run_name_is_refused(runs: Path, name: str) -> None:
    at = upload(page(), "c.tsv", tsv(30))
    at.text_input(key="run_name").set_value(name).run()
    assert "invalid run name" in errors(at)
    assert "invalid run name" in start_disabled_because(at)
    at.text_input(key="run_name").set_value("good_name-2").run()
    assert not at.error and not at.button(key="start").disabled


def test_an_existing_run_name_is_refused(runs: Path) -> None:
    (runs / "taken").mkdir(parents=True)
    (runs / "taken" / "train_config.json").write_text("{}")
    at = upload(page(), "c.tsv", tsv(30))
    at.text_input(key="run_name").set_value("taken").run()
    assert "already exists" in start_disabled_because(at)


# ----------------------------------------------------------------------------------------- runs in each state


def fake_run(run_dir: Path, steps: int = 40, finished: bool = False) -> None:
    """A run directory as training writes it (configuration, metrics, optionally the final scores)."""
    run_dir.mkdir(parents=True)
    (run_dir / "train_config.json").write_text(json.dumps({"optim": {"max_steps": 100, "max_epochs": 100}}))
    records = [
        {
            "kind": "train",
            "step": s,
            "epoch": 0,
            "loss": 5 - s / 20,
            "nll": 4.9 - s / 20,
            "lr": 1e-3,
            "tokens_per_s": 1234.0,
            "elapsed_s": s / 10,
            "max_steps": 100,
        }
        for s in range(10, steps + 1, 10)
    ]
    records.append({"kind": "eval", "step": 20, "dev_loss": 3.0, "dev_ppl": 20.0, "dev_bleu": 7.5, "dev_chrf": 30.0})
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if finished:
        scores = {"bleu": 12.34, "chrf": 45.6, "bleu_signature": "nrefs:1|tok:13a", "chrf_signature": "nrefs:1|nc:6"}
        (run_dir / "metrics.json").write_text(json.dumps({"final": "best", "test_greedy": scores}))


def charts(at: AppTest) -> int:
    return len(at.get("vega_lite_chart"))


def test_a_finished_run_shows_test_scores_with_signatures_and_charts(runs: Path) -> None:
    fake_run(runs / "done", finished=True)
    at = page()
    assert at.selectbox(key="watch_run").value == "done"
    assert metric(at, "Test BLEU (greedy)") == "12.34" and metric(at, "Test chrF (greedy)") == "45.60"
    assert any("nrefs:1|tok:13a" in c.value for c in at.code)
    assert any("run: done" in s.value for s in at.success)
    assert charts(at) == 2


def test_after_a_reload_the_running_job_is_shown_not_the_first_run(runs: Path) -> None:
    fake_run(runs / "aaa-done", finished=True)
    fake_run(runs / "zzz-live")
    pid = control.launch(runs / "zzz-live", SLEEPER)
    at = page()  # a new session, as after a reload
    assert at.selectbox(key="watch_run").value == "zzz-live"
    assert any(f"PID {pid}" in m.value for m in at.markdown)
    at.selectbox(key="watch_run").set_value("aaa-done").run()  # the user's choice then stays
    at.run()
    assert at.selectbox(key="watch_run").value == "aaa-done" and metric(at, "Test BLEU (greedy)") == "12.34"


def test_the_model_picker_and_the_train_page_read_one_runs_folder(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(RUNS_ENV, "~/my-runs")
    monkeypatch.setenv("LAB_MODEL_DIR", str(tmp_path / "no-shipped-model"))
    model = home / "my-runs" / "mine"
    model.mkdir(parents=True)
    fake_network(model)
    translate_page = AppTest.from_file(str(Path(PAGE).parents[1] / "app.py"), default_timeout=30).run()
    assert not translate_page.exception
    assert "run: mine" in translate_page.selectbox(key="model").options
    shown = f"`{os.path.relpath(model.parent, REPO_ROOT)}`"  # from the repository, never the server's own path
    assert any(shown in c.value for c in page().caption)  # "Runs are saved in ..."


def test_a_crashed_run_shows_the_end_of_its_log(runs: Path) -> None:
    run_dir = runs / "broken"
    fake_run(run_dir)
    (run_dir / control.EVENTS_FILE).write_text(
        json.dumps({"event": "start", "pid": 1}) + "\n" + json.dumps({"event": "exit", "returncode": 1}) + "\n"
    )
    (run_dir / control.LOG_FILE).write_text("loading\nTraceback (most recent call last):\nValueError: bad shape\n")
    at = page()
    assert "exit code 1" in errors(at)
    assert any("ValueError: bad shape" in c.value for c in at.code)
    states = [m.value for m in at.markdown if m.value.startswith("**broken**")]
    assert states == ["**broken** — :red[crashed]"]  # words, not emoji (boxes without an emoji font)
    assert not any(b.key == "resume" for b in at.button)
    assert any("cannot be resumed" in c.value for c in at.caption)
    (run_dir / control.STATE_FILE).write_bytes(b"state")
    at.run()
    assert any(b.key == "resume" for b in at.button)


def test_a_symlinked_folder_in_the_runs_folder_is_skipped_with_a_note(runs: Path, tmp_path: Path) -> None:
    fake_run(runs / "real")
    elsewhere = tmp_path / "elsewhere"
    fake_run(elsewhere)
    (runs / "linked").symlink_to(elsewhere, target_is_directory=True)
    (runs / "dangling").symlink_to(tmp_path / "missing", target_is_directory=True)
    at = page()
    assert at.selectbox(key="watch_run").options == ["real"]
    assert any("Skipped symbolic links" in c.value and "'dangling', 'linked'" in c.value for c in at.caption)


def test_a_running_job_shows_progress_and_stops_from_the_page(runs: Path) -> None:
    run_dir = runs / "live"
    fake_run(run_dir, steps=40)
    MetricsLog(run_dir / METRICS_LOG_FILE, enabled=True).evaluating(40, "loss", 120, 299)  # it evaluates now
    pid = control.launch(run_dir, SLEEPER, owner=TAB)
    other_tab = page("browser-tab-2")
    assert not any(b.key == "stop" for b in other_tab.button)
    assert any("only that tab can stop it" in c.value for c in other_tab.caption)
    at = page()
    assert any(f"PID {pid}" in m.value for m in at.markdown)
    progress = at.get("progress")
    assert progress and "step 40 of 100" in progress[0].proto.text
    assert progress[1].proto.text == "Evaluating at step 40 on 299 dev sentences… (120 of 299)"
    assert metric(at, "Tokens/s") == "1,234" and charts(at) == 2
    at.button(key="stop").click().run()
    assert not pid_alive(pid)
    assert control.job_status(run_dir).state == "stopped"
    assert any("stopped" in m.value for m in at.markdown)


@pytest.mark.slow
def test_start_from_the_page_trains_in_the_background(runs: Path) -> None:
    at = upload(page(), "c.tsv", tsv(200))
    at.selectbox(key="init_from").set_value(0).run()  # random weights: a tiny run, not the shipped model's shape
    at.text_input(key="run_name").set_value("from-page").run()
    at.number_input(key="budget_epochs").set_value(2).run()
    at.button(key="start").click().run()
    assert not at.exception and not at.error, errors(at)
    assert any("Started run 'from-page'" in s.value for s in at.success)
    run_dir = runs / "from-page"
    assert (run_dir / "corpus.tsv").read_text().count("\n") == 200
    assert at.selectbox(key="watch_run").value == "from-page"
    deadline = time.monotonic() + 60
    while control.job_status(run_dir).state == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert control.job_status(run_dir).state == "finished", control.log_tail(run_dir)
    assert "--optim.max_epochs=2" in (run_dir / control.LOG_FILE).read_text()
    at.run()
    assert metric(at, "Test BLEU (greedy)")


# ----------------------------------------------------------------------------------------- a real browser


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's Chromium (apt-get install -y chromium)")
def test_browser_upload_start_and_live_chart(runs: Path, tmp_path: Path) -> None:
    """``streamlit run app.py``, open the Train page, upload, start a tiny run, see the chart and the result."""
    corpus = tmp_path / "browser.tsv"
    corpus.write_bytes(tsv(300))
    no_shipped_model = dict(os.environ, LAB_MODEL_DIR=str(tmp_path / "none"))  # a new model, not a fine-tune
    with (
        running_app(no_shipped_model, tmp_path / "server.log", timeout=60) as url,
        browser_page({"width": 1400, "height": 2400}) as (page, page_errors),
    ):
        page.goto(f"{url}/Train")
        page.get_by_text("Train on your own corpus").wait_for(timeout=60_000)
        idle(page)  # each step waits for the rerun the last one started: a widget redrawn under a click is lost
        page.locator("input[type=file]").first.set_input_files(str(corpus))
        page.get_by_text("Validation report").wait_for(timeout=60_000)
        idle(page)
        page.get_by_label("Run name (letters, digits, - and _)").fill("browser-run")
        page.keyboard.press("Enter")
        idle(page)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("Started run").wait_for(timeout=60_000)
        page.locator("[data-testid=stVegaLiteChart]").first.wait_for(timeout=120_000)  # live, while training
        page.get_by_text("Test BLEU (greedy)").wait_for(timeout=180_000)  # the fragment saw the run finish
        page.locator("[data-testid=stVegaLiteChart]").first.screenshot(path=str(tmp_path / "train-chart.png"))
        exceptions = page.locator("[data-testid=stException]").count()
    assert exceptions == 0 and not page_errors
    assert control.job_status(runs / "browser-run").state == "finished"


def test_resume_from_the_page_continues_the_stopped_run(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = runs / "paused"
    fake_run(run_dir)
    (run_dir / control.STATE_FILE).write_bytes(b"state")
    (run_dir / control.EVENTS_FILE).write_text(
        json.dumps({"event": "start", "pid": 1}) + "\n" + json.dumps({"event": "stop"}) + "\n"
    )
    asked: list[bool] = []

    def command(run_dir: Path, args: list[str], overrides: tuple = ()) -> list[str]:
        asked.append("--resume" in args)
        return SLEEPER  # stands in for ``python -m training.train --resume``

    monkeypatch.setattr(control, "training_command", command)
    at = page()
    assert any("stopped" in m.value for m in at.markdown)
    at.button(key="resume").click().run()
    assert asked == [True]
    assert control.job_status(run_dir).state == "running"
    assert any(b.key == "stop" for b in at.button)


# ----------------------------------------------------------------------------------------- limits, estimate, fine-tuning


def capture_commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """``control.training_command`` replaced by one that records the arguments and starts a sleeper."""
    asked: list[list[str]] = []
    real = control.training_command

    def command(run_dir: Path, args: list[str], overrides=()) -> list[str]:
        asked.append(real(run_dir, args, overrides))
        return SLEEPER

    monkeypatch.setattr(control, "training_command", command)
    return asked


def test_every_stopping_rule_is_a_field_named_in_the_caption(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = upload(page(), "c.tsv", tsv(60))
    at.selectbox(key="preset").set_value("tiny").run()
    at.number_input(key="budget_minutes").set_value(3.0).run()
    at.number_input(key="budget_epochs").set_value(7).run()
    at.number_input(key="max_steps_tiny").set_value(150).run()
    at.number_input(key="patience_tiny").set_value(4).run()
    rule = next(c.value for c in at.caption if c.value.startswith("Training stops at whichever comes first"))
    for named in ("3 minutes", "7 epochs", "150 steps", "4 evaluations (every 50 steps) without a better dev loss"):
        assert named in rule
    asked = capture_commands(monkeypatch)
    at.button(key="start").click().run()
    assert not at.exception and not at.error, errors(at)
    argv = asked[0]
    for override in ("--optim.max_minutes=3.0", "--optim.max_epochs=7", "--optim.max_steps=150", "--run.patience=4"):
        assert override in argv
    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "es-en"
    assert f"--run.init_from={shipped}" in argv  # fine-tuning the shipped model of the corpus's direction by default
    at.number_input(key="budget_minutes").set_value(0.0).run()
    at.number_input(key="patience_tiny").set_value(0).run()
    rule = next(c.value for c in at.caption if c.value.startswith("Training stops at whichever comes first"))
    assert "minutes" not in rule and "without a better dev loss" not in rule  # 0 = no such limit


def test_starting_a_fine_tune_of_the_shipped_model(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = upload(page(), "c.tsv", tsv(60))
    chooser = at.selectbox(key="init_from")
    assert chooser.options[0].startswith("random weights") and any("shipped" in o for o in chooser.options)
    chooser.set_value(1).run()
    assert at.number_input(key="finetune_lr").value == pytest.approx(1e-4)
    at.number_input(key="finetune_lr").set_value(5e-5).run()
    at.text_input(key="run_name").set_value("tuned").run()
    asked = capture_commands(monkeypatch)
    at.button(key="start").click().run()
    assert not at.exception and not at.error, errors(at)
    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "es-en"
    assert f"--run.init_from={shipped}" in asked[0] and "--optim.lr=5e-05" in asked[0]
    assert "--data.case_markup=true" in asked[0]


def test_a_model_folder_without_a_tokenizer_cannot_be_fine_tuned(runs: Path) -> None:
    broken = runs / "broken"
    broken.mkdir(parents=True)
    fake_network(broken)
    (broken / "metrics.json").write_text("{}")
    at = upload(page(), "c.tsv", tsv(60))
    options = at.selectbox(key="init_from").options
    at.selectbox(key="init_from").set_value(options.index("run: broken")).run()
    assert "cannot be fine-tuned" in errors(at) and str(runs) not in errors(at)
    assert str(broken) in details(at) and "cannot fine-tune" in start_disabled_because(at)


def test_the_verdict_and_a_failed_reference_scoring_are_shown(runs: Path) -> None:
    fake_run(runs / "done", finished=True)  # no model inside: the reference points cannot be scored
    at = page()
    assert any(i.value.startswith("Too early to tell") for i in at.info)
    at.button(key="references").click().run()
    assert not at.exception and "No reference points" in errors(at) and str(runs) not in errors(at)


def test_a_failed_measurement_says_no_estimate_in_plain_words(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.estimate import EstimateError

    def failing(*args: object) -> None:
        raise EstimateError(f"measuring failed: {runs}/.calibration/x.json: sha256 of --init-from differs")

    monkeypatch.setattr("views.train_estimate.calibrate", failing)
    at = upload(page(), "c.tsv", tsv(60))
    at.button(key="measure").click().run()
    assert not at.exception and errors(at).startswith("No estimate: timing a few training steps")
    assert not [w for w in ("sha256", "--init-from", str(runs)) if w in errors(at)]  # plain words on the page
    assert "sha256 of --init-from differs" in details(at)  # the technical words, in the expander
    assert not at.button(key="start").disabled  # the user may still start without an estimate


def finished(run_dir: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while control.job_status(run_dir).state == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert control.job_status(run_dir).state == "finished", control.log_tail(run_dir)


@pytest.mark.slow
def test_the_estimate_before_start_is_within_twice_what_the_run_takes(runs: Path) -> None:
    at = upload(page(), "c.tsv", tsv(200))
    at.selectbox(key="preset").set_value("tiny").run()
    at.number_input(key="budget_epochs").set_value(3).run()
    assert any("No estimate yet" in c.value for c in at.caption)
    at.button(key="measure").click().run()
    assert not at.exception and not at.error, errors(at)
    assert metric(at, "Epochs the limits allow") == "3.0"
    # beside it, in plain words for the tiny preset too: its measured run, or fine-tuning read through its batches
    assert any(c.value.startswith("Forecast: ") and "“tiny”" in c.value for c in at.caption)
    per_epoch = int(metric(at, "Steps per epoch"))
    at.number_input(key="budget_epochs").set_value(6).run()  # the estimate follows the limits at once
    assert metric(at, "Epochs the limits allow") == "6.0" and not any("No estimate yet" in c.value for c in at.caption)
    at.number_input(key="budget_epochs").set_value(3).run()
    at.text_input(key="run_name").set_value("estimated").run()
    at.button(key="start").click().run()
    run_dir = runs / "estimated"
    finished(run_dir)
    made = json.loads((run_dir / "estimate.json").read_text())
    from jobs.estimate import outcome

    done = outcome(run_dir)
    assert made["steps_per_epoch"] == per_epoch and done.steps == made["steps"]
    assert 0.5 <= done.total_seconds / made["total_seconds"] <= 2.0, (made, done)
    at.run()
    table = next(t.value for t in at.dataframe if "estimated" in t.value.columns)
    assert table.iloc[0].tolist() == ["steps", f"{made['steps']:,}", f"{done.steps:,}"]
    at.button(key="references").click().run()
    assert not at.exception and not at.error, errors(at)
    points = next(t.value for t in at.dataframe if "dev BLEU" in t.value.columns)
    assert {"this run", "copy the source (floor)", "default model (es-en)"} <= set(points["model"])


# ----------------------------------------------------------------------------------------- the default model's gate


def model_folder(path: Path, pair: tuple[str, str] | None = ("es", "en")) -> Path:
    """What the picker and the default's record look for (never loaded here), in the direction ``pair``."""
    fake_network(path)
    if pair is not None:
        config = path / "train_config.json"
        kept = json.loads(config.read_text()) if config.is_file() else {}
        config.write_text(json.dumps({**kept, "data": {"src_lang": pair[0], "tgt_lang": pair[1]}}))
    return path


def test_the_recorded_default_is_read_only_when_it_names_a_model_of_the_runs_folder(runs: Path, tmp_path: Path) -> None:
    from lab.page.model_choices import (
        DEFAULT_CHOICE_FILE,
        default_index,
        find_models,
        record_default,
        recorded_default,
    )

    shipped, model = model_folder(tmp_path / "shipped"), model_folder(runs / "mine")
    model_folder(tmp_path / "outside")
    choices = find_models(shipped, runs)
    assert recorded_default(runs) is None and default_index(choices, runs) == 0
    record_default(runs, model)
    assert recorded_default(runs) == model and choices[default_index(choices, runs)].label == "run: mine"
    (runs / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    for bad in (
        "{not json",
        "[1]",
        json.dumps({"runs": ["../outside"]}),
        json.dumps({"runs": ["link"]}),
        json.dumps({"runs": ["missing"]}),
        json.dumps({"runs": [3]}),
        json.dumps({"runs": "mine"}),
        json.dumps({"runs": [".uploads"]}),
    ):
        (runs / DEFAULT_CHOICE_FILE).write_text(bad)
        assert recorded_default(runs) is None and default_index(choices, runs) == 0, bad


def test_each_direction_keeps_its_own_default_and_the_last_made_opens_the_page(runs: Path, tmp_path: Path) -> None:
    from lab.page.model_choices import direction_default, record_default, recorded_default

    shipped = model_folder(tmp_path / "shipped")
    es_en, en_es, es_en_2 = (
        model_folder(runs / n, p) for n, p in (("a", ("es", "en")), ("b", ("en", "es")), ("c", ("es", "en")))
    )
    assert direction_default(runs, ("es", "en"), shipped) == shipped  # the shipped model's own direction
    assert direction_default(runs, ("en", "es"), shipped) is None  # a first model of its direction has none to beat
    record_default(runs, es_en)
    record_default(runs, en_es)
    assert (
        direction_default(runs, ("es", "en"), shipped) == es_en
        and direction_default(runs, ("en", "es"), shipped) == en_es
    )
    assert recorded_default(runs) == en_es
    record_default(runs, es_en_2)  # replaces a, keeps b
    assert (
        direction_default(runs, ("es", "en"), shipped) == es_en_2
        and direction_default(runs, ("en", "es"), shipped) == en_es
    )
    assert recorded_default(runs) == es_en_2


def points(run: dict, default: dict | None = None, floor: float = 2.0, canaries: int = 0) -> dict:
    scores = {"this run": run, "copy the source (floor)": {"bleu": floor, "loops": 0}}
    if default is not None:
        scores["default model (es-en)"] = default
    return {"sentences": 300, "canaries": canaries, "scores": scores}


def test_the_default_rule_beside_a_current_default_and_for_a_first_model() -> None:
    from jobs.run_verdict import default_checks, refusal_text

    def passed(p: dict) -> dict[str, bool]:
        return {c.name: c.passed for c in default_checks(p)}

    level = {"bleu": 30.0, "loops": 2}
    assert all(passed(points({"bleu": 29.8, "loops": 7}, level)).values())  # within 0.3 BLEU, 5 more loops
    assert passed(points({"bleu": 29.6, "loops": 8}, level)) == {"dev BLEU": False, "dev outputs that loop": False}
    first = default_checks(points({"bleu": 2.5, "loops": 0}, floor=2.0))  # no default: it must beat copying by 1
    assert [c.passed for c in first] == [False, True] and first[0].baseline == 2.0
    assert all(passed(points({"bleu": 3.0, "loops": 15}, floor=2.0)).values())  # 5 % of 300 may loop
    assert not passed(points({"bleu": 9.0, "loops": 16}, floor=2.0))["dev outputs that loop"]
    canary = points(
        {"bleu": 31, "loops": 0, "canaries": 7, "canaries_wrong": ['"Hola mundo" → "Hide world."']},
        {**level, "canaries": 8},
        canaries=8,
    )
    checks = default_checks(canary)
    assert (
        checks[-1].name == "canaries right"
        and not checks[-1].passed
        and checks[-1].wrong == ('"Hola mundo" → "Hide world."',)
    )
    text = refusal_text(checks, first=False)
    assert "canaries right" in text and "dev BLEU" not in text and "Translate page" in text and text.count(". ") <= 2
    assert "first default" in refusal_text(first, first=True)


@pytest.mark.slow
def test_a_tiny_run_is_refused_as_the_default_in_plain_words(
    runs: Path, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from lab.page.model_choices import recorded_default

    baseline = tmp_path / "shipped"
    shutil.copytree(tiny_model_dir, baseline)
    monkeypatch.setenv("LAB_MODEL_DIR", str(baseline))
    shutil.copytree(tiny_model_dir, runs / "bad")  # a tiny model: as good as its copy, but gets no canary right
    at = page()
    assert at.selectbox(key="watch_run").value == "bad"
    at.button(key="make_default").click().run()
    assert not at.exception and "The current default still does better on canaries right" in errors(at)
    checks = next(t.value for t in at.dataframe if "check" in t.value.columns and "rule" in t.value.columns)
    assert checks.set_index("check")["passed"].to_dict() == {
        "dev BLEU": True,  # the same weights score the same
        "dev outputs that loop": True,
        "canaries right": False,
    }
    wrong = next(t.value for t in at.dataframe if "what this run said" in t.value.columns)
    assert (wrong["check"] == "canaries right").sum() == 8  # each canary it gets wrong, named with its output
    assert recorded_default(runs) is None  # still not the default, and still listed for the picker
    monkeypatch.setenv("LAB_MODEL_DIR", str(tmp_path / "none"))  # no default for es→en: a first model
    at = page()
    at.button(key="make_default").click().run()
    assert "not yet good enough to be the first default" in errors(at)
    assert not [w for w in ("sha256", "--init-from", str(runs), "Traceback") if w in errors(at)]  # plain words
    assert recorded_default(runs) is None


def test_a_passing_run_becomes_the_default_of_its_direction(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs import run_verdict
    from lab.page.model_choices import recorded_default, shipped_model
    from training.reference_points import REFERENCES_FILE

    fake_run(runs / "good", finished=True)
    model_folder(runs / "good")
    written: list[Path | None] = []

    def scored(run_dir: Path, default: Path | None) -> None:  # the process's file, as a passing run has it
        written.append(default)
        good = {"bleu": 40.0, "chrf": 60.0, "loops": 0, "canaries": 8, "canaries_wrong": []}
        found = points(good, {"bleu": 35.0, "chrf": 55.0, "loops": 1, "canaries": 8}, canaries=8)
        (run_dir / REFERENCES_FILE).write_text(json.dumps({**found, "default": str(default.resolve())}))

    monkeypatch.setattr(run_verdict, "score_reference_points", scored)
    at = page()
    at.button(key="make_default").click().run()
    assert not at.exception and not at.error, errors(at)
    assert any("is now the default Spanish → English model" in s.value for s in at.success)
    assert written == [shipped_model()] and recorded_default(runs) == runs / "good"
    at.run()
    assert not any(b.key == "make_default" for b in at.button)
    assert any("is the default Spanish → English model" in c.value for c in at.caption)


@pytest.mark.slow
def test_a_fine_tune_of_a_finished_run_trains_from_the_page(runs: Path, tiny_model_dir: Path) -> None:
    import shutil

    shutil.copytree(tiny_model_dir, runs / "parent")
    at = upload(page(), "c.tsv", tsv(200))
    at.selectbox(key="preset").set_value("tiny").run()
    options = at.selectbox(key="init_from").options
    at.selectbox(key="init_from").set_value(options.index("run: parent")).run()
    at.number_input(key="max_steps_tiny").set_value(20).run()
    at.text_input(key="run_name").set_value("child").run()
    at.button(key="start").click().run()
    assert not at.exception and not at.error, errors(at)
    finished(runs / "child")
    saved = json.loads((runs / "child" / "train_config.json").read_text())
    assert saved["run"]["init_from"] == str((runs / "parent").resolve()) and saved["optim"]["lr"] == 1e-4
    assert (runs / "child" / "spm.model").read_bytes() == (runs / "parent" / "spm.model").read_bytes()


ENGLISH_FIRST = [
    ("See you Monday at school.", "Nos vemos el lunes en la escuela."),
    ("Where is the train station?", "¿Dónde está la estación de tren?"),
    ("I like reading books at night.", "Me gusta leer libros por la noche."),
    ("She doesn't speak English.", "Ella no habla inglés."),
]


def english_first(n: int) -> bytes:
    return "".join(f"{en} {i}\t{es} {i}\n" for i in range(n) for en, es in ENGLISH_FIRST).encode()


def test_the_languages_are_proposed_from_the_text_and_recorded_by_the_run(
    runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = upload(page(), "en-es.tsv", english_first(10))
    assert at.selectbox(key="source_lang").value == "en" and at.selectbox(key="target_lang").value == "es"
    assert not at.warning and any("source (English)" in d.value.columns for d in at.dataframe)
    at.text_input(key="run_name").set_value("en-es").run()
    asked = capture_commands(monkeypatch)
    at.button(key="start").click().run()
    assert not at.exception and not at.error, errors(at)
    assert "--data.src_lang=en" in asked[0] and "--data.tgt_lang=es" in asked[0]


def test_columns_picked_against_the_text_are_called_swapped(runs: Path) -> None:
    at = upload(page(), "en-es.tsv", english_first(10))
    at.selectbox(key="source_lang").set_value("es").run()
    at.selectbox(key="target_lang").set_value("en").run()
    assert [w.value for w in at.warning] and "swapped" in at.warning[0].value
    assert not at.button(key="start").disabled  # the user decides


def test_a_language_outside_the_list_by_its_iso_code(runs: Path) -> None:
    at = upload(page(), "en-es.tsv", english_first(10))
    at.selectbox(key="target_lang").set_value("other").run()
    at.text_input(key="target_lang_code").set_value("Spanish!").run()
    assert "expected an ISO code" in start_disabled_because(at)
    at.text_input(key="target_lang_code").set_value("ast").run()
    assert not at.button(key="start").disabled
    at.selectbox(key="target_lang").set_value("en").run()
    assert "both English" in start_disabled_because(at)


def test_the_dev_set_and_the_fine_tune_shape_are_said(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = upload(page(), "c.tsv", tsv(2_000))  # tiny asks for 20 dev pairs: floored at 5 % of 2,000
    assert any("holds out 100 dev sentences" in c.value for c in at.caption)
    asked = capture_commands(monkeypatch)
    at.button(key="start").click().run()
    assert not at.exception and "--data.dev_size=100" in asked[0]
    at = page()
    at.selectbox(key="init_from").set_value(1).run()
    assert any(c.value.startswith("Fine-tuning keeps the shape") for c in at.caption)


def test_no_state_of_the_page_shows_a_raw_none_nan_or_configuration_key(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page fresh; with an upload (its report, estimate and forecast); with a finished run (one from before the
    stop reasons were words) and a first model's default check, whose baseline has no figure for some checks; with
    a run training and evaluating, then stopped: words only (no "None", "nan", "optim.", "data.")."""
    from jobs import run_verdict
    from training.reference_points import REFERENCES_FILE

    found = {"fresh": raw_words(page()), "upload": raw_words(upload(page(), "c.tsv", tsv(200)))}
    fake_run(runs / "done", finished=True)
    result = json.loads((runs / "done" / "metrics.json").read_text())
    kept = {"checkpoint": "best", "dev_loss": 2.5, "best_step": 20, "last_step": 40}
    result |= {"kept": kept, "stopped": "optim.max_minutes = 7 reached"}
    (runs / "done" / "metrics.json").write_text(json.dumps(result))
    model_folder(runs / "done")

    def scored(run_dir: Path, default: Path | None) -> None:  # a first model of its direction: against copying
        run = {"bleu": 9.0, "chrf": 30.0, "loops": 1, "canaries": 3, "canaries_wrong": ["Hi world."]}
        (run_dir / REFERENCES_FILE).write_text(json.dumps(points(run, canaries=8)))

    monkeypatch.setattr(run_verdict, "score_reference_points", scored)
    monkeypatch.setenv("LAB_MODEL_DIR", str(tmp_path / "none"))  # no Spanish → English default yet
    at = page()
    assert any("Training stopped at the 7-minute limit." in text for text in shown_texts(at))
    at.button(key="make_default").click().run()
    assert any("rule" in table.value.columns for table in at.dataframe), "no default check"
    found["finished"] = raw_words(at)
    fake_run(runs / "live", steps=40)
    MetricsLog(runs / "live" / METRICS_LOG_FILE, enabled=True).evaluating(40, "bleu", 64, 100)
    control.launch(runs / "live", SLEEPER, owner=TAB)
    at = page()
    assert at.selectbox(key="watch_run").value == "live" and len(at.get("progress")) == 2
    found["training"] = raw_words(at)
    at.button(key="stop").click().run()
    found["stopped"] = raw_words(at)
    assert not any(found.values()), {state: words for state, words in found.items() if words}
