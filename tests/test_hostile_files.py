"""Files that lie, handed to the lab by a user: each is refused in one short line, in bounded time and memory, before
anything is allocated; and what a killed or damaged run leaves is refused or cleaned at resume."""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from conftest import APP, alone, toy_pairs, write_tsv
from safetensors.torch import load_file
from streamlit.testing.v1 import AppTest
from test_every_command import run as run_command
from test_train_page import PAGE as TRAIN_PAGE
from test_train_page import errors, page, runs, server_file, upload  # noqa: F401 (runs: a fixture)

import jobs.uploads
import translate.model_dir
from data.corpus import CorpusError, read_corpus
from data.data_config import DataConfig
from data.readers import MAX_LINE, Reading, ReadReport
from data.split_record import file_sha256, read_record
from data.tokenizer import Tokenizer, TokenizerError
from jobs.control import log_tail
from jobs.run_progress import read_jsonl
from lab.page.model_choices import find_models, last_step
from model.config import ModelConfig
from model.run_dir import SNAPSHOTS_DIR, STATE_FILE, WEIGHTS_FILE
from model.weights import ModelLoadError, file_shapes
from training import checkpoint
from training.train import main as train
from translate.model_dir import load_model
from translate.settings import RUNS_ENV, repo_relative
from translate.translator import Translator

GOOD = ModelConfig(src_vocab_size=8, tgt_vocab_size=8)


def one_line(
    call: Callable[[], object], error: type[Exception] | tuple[type[Exception], ...], seconds: float = 5.0
) -> str:
    """The message of the ``error`` that ``call`` raises within ``seconds`` (never a hang), checked to be one line
    of at most 300 characters."""
    found: list[BaseException] = []
    worker = threading.Thread(target=lambda: found.append(catch(call)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert found, f"no answer within {seconds} s"
    assert isinstance(found[0], error), repr(found[0])
    message = str(found[0])
    assert "\n" not in message and len(message) <= 300, message[:400]
    return message


def catch(call: Callable[[], object]) -> BaseException:
    try:
        call()
    except BaseException as err:
        return err
    return AssertionError("no error")


def lying_folder(folder: Path, config: Callable[[Path], None]) -> Path:
    """A model folder whose config.json ``config`` makes, beside a weights file never reached."""
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"never read")
    config(folder / "config.json")
    return folder


def text(content: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(content)


LIES = {
    "a FIFO": (os.mkfifo, "named pipe (FIFO), not a regular file"),
    "a device": (lambda path: path.symlink_to("/dev/zero"), "a device, not a regular file"),
    "a link to itself": (lambda path: path.symlink_to(path), "Too many levels of symbolic links"),
    "too big": (text(json.dumps({"norm": "x" * 2_000_000})), "bytes; expected at most 1,048,576"),
    "100,000 deep": (text("[" * 100_000 + "]" * 100_000), "nested over 32 deep"),
    "a 5,000-digit d_model": (text('{"d_model": ' + "9" * 5000 + "}"), "a number of 5,000 characters"),
    "a long norm": (text(json.dumps({**json.loads(GOOD.to_json()), "norm": "n" * 500_000})), "got 'nnnnnnnn"),
    "pad_id = eos_id": (text(json.dumps({**json.loads(GOOD.to_json()), "pad_id": 3})), "pad_id and model.eos_id"),
    "unk_id = bos_id": (text(json.dumps({**json.loads(GOOD.to_json()), "unk_id": 2})), "unk_id and model.bos_id"),
}


@pytest.mark.parametrize("lie", LIES)
def test_a_config_json_that_lies_is_one_line_in_bounded_time(tmp_path: Path, lie: str) -> None:
    make, expected = LIES[lie]
    folder = lying_folder(tmp_path / "model", make)
    message = one_line(lambda: load_model(folder), ModelLoadError)
    assert expected in message and "config.json" in message


@pytest.mark.parametrize("name", ["spm.model", "name_guard.json"])
def test_a_fifo_beside_the_weights_is_refused_never_skipped(tiny_model_dir: Path, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for kept in ("config.json", "model.safetensors", "spm.model"):
        if kept != name:
            (folder / kept).write_bytes((tiny_model_dir / kept).read_bytes())
    os.mkfifo(folder / name)  # was: "no tokenizer", or a model translating without its guard
    message = one_line(lambda: Translator.load(folder), (ModelLoadError, TokenizerError))
    assert message == f"{folder / name}: a named pipe (FIFO), not a regular file"


def test_the_picker_shows_a_folder_that_lies_as_refused_and_never_offers_it(tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    lying_folder(runs_dir / "liar", LIES["pad_id = eos_id"][0])
    lying_folder(runs_dir / "honest", text(GOOD.to_json()))
    choices = {c.path.name: c for c in find_models(tmp_path / "none", runs_dir)}
    assert choices["honest"].available and not choices["honest"].refused
    liar = choices["liar"]
    assert not liar.available and liar.label == "run: liar (refused)" and "pad_id" in liar.refused
    assert liar.refused.startswith(
        f"{repo_relative(runs_dir / 'liar')}/"
    )  # from the repository, never the server's path


def test_the_translate_page_says_why_its_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_MODEL_DIR", str(lying_folder(tmp_path / "liar", LIES["pad_id = eos_id"][0])))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    alone(monkeypatch, tmp_path)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert at.selectbox(key="model").value.label == "shipped: liar (refused)"
    assert any("pad_id and model.eos_id are both 3" in e.value for e in at.error)
    assert at.button(key="translate").disabled


def test_a_model_too_big_for_this_machine_is_refused_before_allocating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(translate.model_dir, "MEMORY_BYTES", 1 << 30)  # a machine of 1 GB: 256 MB for one model
    big = ModelConfig(src_vocab_size=100_000, tgt_vocab_size=100_000, d_model=512, n_heads=8)  # 58 M floats
    folder = lying_folder(tmp_path / "big", text(big.to_json()))
    message = one_line(lambda: load_model(folder), ModelLoadError)
    assert f"a model of {big.n_elements:,} parameters needs about" in message and "expected at most" in message
    assert find_models(tmp_path / "none", tmp_path)[1].refused == message.replace(
        str(tmp_path), repo_relative(tmp_path)
    )


def test_a_tokenizer_file_over_its_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with open(tmp_path / "spm.model", "wb") as file:
        file.truncate(65 << 20)  # sparse: 65 MB on paper
    assert "expected at most 67,108,864" in one_line(lambda: Tokenizer.load(tmp_path), TokenizerError)


def test_a_safetensors_header_over_its_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    with open(path, "wb") as file:
        file.write((20 << 20).to_bytes(8, "little"))
        file.truncate(8 + (20 << 20))
    message = one_line(lambda: file_shapes(path), ModelLoadError)
    assert "a safetensors header of 20,971,520 bytes" in message and "expected at most 16,777,216" in message


def test_a_model_path_of_5000_characters_is_one_short_line(tmp_path: Path) -> None:
    given = tmp_path / ("x" * 5000)  # was OSError (File name too long) from is_dir: a traceback
    message = one_line(lambda: load_model(given), ModelLoadError)
    assert message == f"{str(given)[:200]}…: model directory not found"


def test_a_truncated_safetensors_file_says_it_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes((300_000).to_bytes(8, "little") + b"{" * 1000)  # a header under the cap, cut by a copy
    message = one_line(lambda: file_shapes(path), ModelLoadError)  # was "…expected at most 16,777,216"
    assert message == f"{path}: truncated: its header needs 300,000 bytes, the file holds 1,000 after it"


def test_a_split_record_that_lies_is_one_line(tmp_path: Path) -> None:
    corpus = write_tsv(tmp_path / "c.tsv", toy_pairs(30))
    d = DataConfig(corpora=(str(corpus),))
    record = {"corpora": [{"file": "c.tsv", "sha256": file_sha256(corpus)}], "dev": [[0, 999]], "test": []}
    (tmp_path / "split.json").write_text(json.dumps(record))
    assert "a dev or test position not among" in one_line(lambda: read_record(tmp_path, d), CorpusError)
    (tmp_path / "split.json").unlink()
    os.mkfifo(tmp_path / "split.json")
    assert "named pipe" in one_line(lambda: read_record(tmp_path, d), CorpusError)


# ----------------------------------------------------------------------------------------- corpora


def tmx_with(inside: bytes) -> bytes:
    tu = b'<tu><tuv xml:lang="es"><seg>Hola.</seg></tuv><tuv xml:lang="en"><seg>Hi.</seg></tuv></tu>\n'
    return b'<?xml version="1.0"?>\n<tmx version="1.4"><body>\n' + tu + inside + b"\n" + tu + b"</body></tmx>\n"


@pytest.mark.parametrize(("start", "end"), [(b"<!--", b"-->"), (b"<?note ", b"?>")])
def test_a_long_comment_or_processing_instruction_takes_time_linear_in_its_size(
    tmp_path: Path, start: bytes, end: bytes
) -> None:
    """A "<" every 64 bytes inside one token: the parser holds an unfinished token whole, so the bytes fed with no tag
    completed are capped: 20 MB take at most 4 times as long as 5 MB (quadratic: 16), and under 3 s."""
    seconds = {}
    for mb in (5, 20):
        path = tmp_path / f"{mb}.tmx"
        path.write_bytes(tmx_with(start + (b"x" * 63 + b"<") * (mb << 14) + end))
        began = time.process_time()
        message = one_line(lambda path=path: list(read_corpus(path)), CorpusError, seconds=60)
        seconds[mb] = time.process_time() - began
        assert f"{path}:4: after <tu> 1: over" in message and "comment" in message
    assert seconds[20] < min(3.0, 4 * seconds[5] + 0.5), seconds


def one_long_line(tmp_path: Path, fmt: str) -> Path:
    """A corpus of ``fmt`` with 30 good pairs and, third, one line of 16 MB."""
    long, pairs = "x" * (16 << 20), toy_pairs(30)
    if fmt == "moses":
        for side, texts, third in (("es", [s for s, _ in pairs], long), ("en", [t for _, t in pairs], "x")):
            (tmp_path / f"c.{side}").write_text("\n".join([*texts[:2], third, *texts[2:]]) + "\n")
        return tmp_path / "c.es"
    sep, head = ("\t", "") if fmt == "tsv" else (",", "es,en\n")
    lines = [f"{s}{sep}{t}" for s, t in pairs]
    path = tmp_path / f"c.{fmt}"
    path.write_text(head + "\n".join([*lines[:2], long + sep + "y", *lines[2:]]) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["tsv", "csv", "moses"])
def test_a_line_over_the_cap_is_skipped_without_being_held(tmp_path: Path, fmt: str) -> None:
    path = one_long_line(tmp_path, fmt)
    report = ReadReport()
    tracemalloc.start()
    pairs = read_corpus(path, fmt, Reading(skip_bad=True), report)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(pairs) == 30 and report.skipped == {"line too long": 1}, report.skipped
    assert peak < 5 * MAX_LINE, peak  # the 16 MB line is read a block at a time, never whole
    message = one_line(lambda: read_corpus(path, fmt), CorpusError)
    assert f":{3 + (fmt == 'csv')}: a line of over 1,048,576 bytes" in message


def test_a_file_of_tabs_says_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "tabs.tsv"
    path.write_text("\t\t\n" * 50)
    message = one_line(lambda: read_corpus(path), CorpusError)
    assert (
        message == f"{path}: file is blank: its 50 lines hold only tabs or spaces; expected one sentence pair per line"
    )


# ----------------------------------------------------------------------------------------- the Train page


@pytest.mark.usefixtures("runs")
def test_a_nul_byte_or_a_fifo_on_the_server_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    os.mkfifo(corpora / "pipe.tsv")
    monkeypatch.setenv("LAB_CORPUS_DIRS", str(corpora))
    at = server_file(page(), f"{corpora}/bad\0name.tsv")
    assert "a path cannot hold a NUL byte" in errors(at) and len(at.error) == 1
    at.text_input(key="server_path").set_value(f"{corpora}/pipe.tsv").run()  # would block the page for good
    assert not at.exception and errors(at) == f"{corpora}/pipe.tsv: a named pipe (FIFO), not a regular file"
    (corpora / "loop.tsv").symlink_to(corpora / "loop.tsv")  # pathlib's resolve raised RuntimeError on it
    at.text_input(key="server_path").set_value(f"{corpora}/loop.tsv").run()
    assert not at.exception and errors(at) == f"{corpora}/loop.tsv: cannot be read (Too many levels of symbolic links)"


@pytest.mark.usefixtures("runs")
def test_a_refusal_names_the_corpus_as_the_user_gave_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_CORPUS_DIRS", str(tmp_path))
    given = f"{tmp_path}/sub/../missing.tsv"
    at = server_file(page(), given)
    assert errors(at).startswith(f"{given}: file not found"), errors(at)


@pytest.mark.usefixtures("runs")
def test_a_full_disk_at_upload_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Path, target: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "replace", full)  # the rename that puts a staged upload in place
    at = upload(page(), "mine.tsv", b"Hola.\tHello.\n" * 30)
    assert errors(at) == (
        "mine.tsv could not be saved in the runs folder (No space left on device); free space, or give a server path"
    )
    staging = Path(os.environ[RUNS_ENV]) / jobs.uploads.STAGING_DIR
    assert not [p for p in staging.rglob("*") if p.is_file()]  # no part left behind


def test_a_run_folder_of_fifos_never_blocks_the_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs_dir = tmp_path / "runs"
    run = lying_folder(runs_dir / "liar", text(GOOD.to_json()))
    for name in ("metrics.jsonl", "train.log", "job.jsonl", "evaluating.json", "train_config.json", "estimate.json"):
        os.mkfifo(run / name)  # each read by the Train page or the picker: an open() here waited for a writer
    (run / "probes").mkdir()
    os.mkfifo(run / "probes" / "tokens.json")
    found: list[object] = []
    worker = threading.Thread(
        target=lambda: found.append((last_step(run), log_tail(run), read_jsonl(run / "job.jsonl"))), daemon=True
    )
    worker.start()
    worker.join(10)
    assert found == [(0, "", [])]
    monkeypatch.setenv(RUNS_ENV, str(runs_dir))
    at = AppTest.from_file(TRAIN_PAGE, default_timeout=30)
    at.session_state["owner_token"] = "tab"
    assert not at.run().exception


# ----------------------------------------------------------------------------------------- resuming


@pytest.fixture
def stopped_run(tmp_path: Path) -> tuple[Path, list[str]]:
    """A tiny run stopped after its state at step 4 was saved, and its command line."""
    corpus, run = write_tsv(tmp_path / "toy.tsv", toy_pairs(120)), tmp_path / "run"
    argv = ["--config", "configs/tiny.toml", "--corpus", str(corpus), "--out", str(run), "--run.device=cpu"]
    argv += ["--optim.max_steps=4", "--optim.max_tokens=160", "--run.eval_every=4", "--run.save_every=4"]
    assert train([*argv, "--run.dev_bleu_sentences=2"]) == 0 and (run / STATE_FILE).is_file()
    return run, ["--out", str(run), "--resume"]


@pytest.mark.parametrize("damage", ["truncated", "random bytes"])
def test_a_damaged_training_state_is_one_line_and_a_partial_snapshot_goes_at_resume(
    stopped_run: tuple[Path, list[str]], capsys: pytest.CaptureFixture, damage: str
) -> None:
    run, resume = stopped_run
    state = (run / STATE_FILE).read_bytes()
    partial = run / SNAPSHOTS_DIR / ".step-0000006.partial-0123abcd"  # a kill while a snapshot was written
    partial.mkdir()
    (partial / "model.safetensors.tmp").write_bytes(b"half")
    (run / STATE_FILE).write_bytes(state[: len(state) // 2] if damage == "truncated" else os.urandom(len(state)))
    capsys.readouterr()
    assert train(resume) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(f"error: {run / STATE_FILE}: not a training state"), err
    assert "cannot be resumed" in lines[0] and len(lines[0]) < 400 and "Traceback" not in err
    (run / STATE_FILE).write_bytes(state)
    assert train([*resume, "--optim.max_steps=6"]) == 0
    assert not partial.exists() and [p.name for p in (run / SNAPSHOTS_DIR).iterdir() if p.name.startswith(".")] == []
    with pytest.raises(checkpoint.StateError, match="named pipe"):
        (run / STATE_FILE).unlink()
        os.mkfifo(run / STATE_FILE)
        checkpoint.load_state(run)


def test_a_snapshot_a_kill_cut_short_is_written_at_resume(stopped_run: tuple[Path, list[str]]) -> None:
    run, resume = stopped_run
    snapshot = run / SNAPSHOTS_DIR / "step-0000004"
    before = load_file(str(snapshot / WEIGHTS_FILE))
    shutil.rmtree(snapshot)  # kill -9 after the state of step 4 was saved, while its snapshot was written
    partial = run / SNAPSHOTS_DIR / ".step-0000004.partial-0123abcd"
    partial.mkdir()
    (partial / f"{WEIGHTS_FILE}.tmp").write_bytes(b"half")
    assert train([*resume, "--optim.max_steps=6"]) == 0
    after = load_file(str(snapshot / WEIGHTS_FILE))  # was missing for good: the next snapshot is step 6's
    assert after.keys() == before.keys() and all(torch.equal(after[name], before[name]) for name in before)
    assert not partial.exists()


def test_a_fifo_training_state_is_named_at_resume(stopped_run: tuple[Path, list[str]]) -> None:
    run, resume = stopped_run
    (run / STATE_FILE).unlink()
    os.mkfifo(run / STATE_FILE)
    status, err = run_command("train", resume, seconds=60)  # was "no training state to resume from"
    assert (status, err) == (
        2,
        f"error: --out {run}: its {STATE_FILE} is not a regular file as a run writes it; nothing written: move it away\n",
    )


@pytest.mark.parametrize(
    ("name", "lie"),
    [("metrics.jsonl", "a FIFO"), ("config.json", "a FIFO"), ("metrics.jsonl", "a link"), ("checkpoints", "a FIFO")],
)
def test_a_run_folder_whose_own_files_lie_is_one_line_at_resume(
    stopped_run: tuple[Path, list[str]], tmp_path: Path, name: str, lie: str
) -> None:
    run, resume = stopped_run
    path, victim = run / name, tmp_path / "victim.txt"
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    victim.write_text("someone's file\n")
    os.mkfifo(path) if lie == "a FIFO" else path.symlink_to(victim)
    status, err = run_command("train", resume, seconds=60)  # was a hang, a traceback, or appended to the victim
    what = "a folder" if name == "checkpoints" else "a regular file"
    assert (status, err) == (
        2,
        f"error: --out {run}: its {name} is not {what} as a run writes it; nothing written: move it away\n",
    )
    assert victim.read_text() == "someone's file\n"
