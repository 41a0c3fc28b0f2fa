"""``training.train`` and its run directory: one writer whoever starts it, a run that never saved can start
again, a full disk names the folder and leaves nothing half-written, a corpus that cannot give dev and test sets is
refused before training, and a child model is scored on its parent's dev and test pairs."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import toy_pairs, write_tsv

from data.corpus import CorpusError
from data.split_record import SPLIT_RECORD_FILE
from model.config import ConfigError
from model.run_dir import DATA_REPORT_FILE, METRICS_LOG_FILE, RUN_LOCK_FILE, SPLITS_DIR, split_file
from training import prepare
from training.run_lock import acquire
from training.train import main
from training.train_config import load_train_config

TINY = ["--config", "configs/tiny.toml"]
REPO = Path(__file__).resolve().parents[1]


def tiny_run(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        *TINY,
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--optim.max_steps=4",
        "--run.eval_every=2",
        "--run.dev_bleu_sentences=2",
        *extra,
    ]


# ----------------------------------------------------------------------------------------- one writer


@pytest.mark.parametrize("resume", [False, True])
def test_a_second_writer_is_refused_and_names_the_holder(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture, resume: bool
) -> None:
    out = tmp_path / "run"
    with acquire(out):  # another writer: a page job, a CLI run or torchrun's rank 0
        argv = ["--out", str(out), "--resume"] if resume else tiny_run(toy_corpus, out)
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{out} is being written by process {os.getpid()} (a command-line run" in err
    assert sorted(p.name for p in out.iterdir()) == [RUN_LOCK_FILE]  # nothing written


def test_every_form_of_the_command_takes_the_same_lock(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with acquire(out):
        for form in (["-m", "training.train"], ["-m", "training", "train"]):
            done = subprocess.run(
                [sys.executable, *form, "--out", str(out), "--resume"],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 2 and "is being written by process" in done.stderr, done.stderr


def test_a_vocabulary_the_corpus_cannot_make_is_one_line(
    tmp_path: Path, toy_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(tiny_run(toy_corpus, tmp_path / "run", "--data.vocab_size=10")) == 2  # was SentencePiece's traceback
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "data.vocab_size 10: SentencePiece cannot make it from this corpus" in errors[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_run_killed_before_its_first_save_starts_again(tmp_path: Path, toy_corpus: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / METRICS_LOG_FILE).write_text('{"kind": "train", "step": 1}\n')  # what a kill before the first save leaves
    assert main(["--out", str(out), "--resume"]) == 2  # nothing to resume from...
    assert main(tiny_run(toy_corpus, out)) == 0  # ...so it starts again
    steps = [json.loads(line).get("step") for line in (out / METRICS_LOG_FILE).read_text().splitlines()]
    assert steps == sorted(steps)


# ----------------------------------------------------------------------------------------- data that cannot work


def test_a_corpus_whose_pairs_all_share_a_sentence_is_refused_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = write_tsv(tmp_path / "one.tsv", [(f"Hola número {i}.", "Hello.") for i in range(60)])
    assert main(tiny_run(corpus, tmp_path / "run")) == 2
    assert "no pairs left for the" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # a new run folder whose data is refused is not left behind


def test_a_full_disk_names_the_folder_and_leaves_no_partial_files(
    tmp_path: Path, toy_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_train_config(Path("configs/tiny.toml"), [f"data.corpora=[{str(toy_corpus)!r}]"])
    real_save = prepare.Tokenizer.save

    def full(self: prepare.Tokenizer, directory: Path) -> None:
        real_save(self, directory)  # half of it reached the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(prepare.Tokenizer, "save", full)
    out = tmp_path / "run"
    out.mkdir()
    with pytest.raises(CorpusError, match=rf"{out}: no space left .* removed the partial files"):
        prepare.prepare_data(config.data, out)
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------------------------------- the parent's split


def test_a_child_keeps_its_parents_dev_and_test_pairs_exactly(tmp_path: Path, tiny_model_dir: Path) -> None:
    corpus = json.loads((tiny_model_dir / "train_config.json").read_text())["data"]["corpora"]
    parent = tmp_path / "parent"
    shutil.copytree(tiny_model_dir, parent)
    for kind in ("with its splits", "made again from its config"):
        if kind != "with its splits":
            shutil.rmtree(parent / SPLITS_DIR)  # a shipped model directory holds only the split's sha256
        out = tmp_path / kind.replace(" ", "-")
        other_split = ["--data.split_seed=99", "--data.dev_size=30", "--optim.max_steps=2"]
        assert main([*TINY, "--corpus", corpus[0], "--out", str(out), "--init-from", str(parent), *other_split]) == 0
        for name in ("dev", "test"):
            assert split_file(out, name).read_bytes() == split_file(tiny_model_dir, name).read_bytes(), kind
        dev_test = {line for name in ("dev", "test") for line in split_file(out, name).read_text().splitlines()}
        srcs = {line.split("\t")[0] for line in dev_test}
        assert not any(line.split("\t")[0] in srcs for line in split_file(out, "train").read_text().splitlines())


def test_a_new_split_that_the_parent_trained_on_is_refused(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = json.loads((tiny_model_dir / "train_config.json").read_text())["data"]["corpora"][0]
    out = tmp_path / "child"
    unpinned = ["--data.pin_parent_split=false", "--data.split_seed=99", "--optim.max_steps=2"]
    assert main([*TINY, "--corpus", corpus, "--out", str(out), "--init-from", str(tiny_model_dir), *unpinned]) == 2
    err = capsys.readouterr().err
    assert "share a sentence with" in err and "scores would mean nothing" in err
    assert not (out / METRICS_LOG_FILE).exists()


def test_a_parent_split_that_cannot_be_made_again_is_refused(tmp_path: Path, tiny_model_dir: Path) -> None:
    parent = tmp_path / "parent"
    shutil.copytree(tiny_model_dir, parent)
    shutil.rmtree(parent / SPLITS_DIR)
    report = json.loads((parent / DATA_REPORT_FILE).read_text())
    report["sha256"]["dev"] = "0" * 64
    (parent / DATA_REPORT_FILE).write_text(json.dumps(report))
    corpus = json.loads((parent / "train_config.json").read_text())["data"]["corpora"][0]
    config = load_train_config(Path("configs/tiny.toml"), [f"data.corpora=[{corpus!r}]"])
    with pytest.raises(CorpusError, match=r"its dev split read from split\.json is not the one"):
        prepare.parent_split(parent, config.data)


def test_another_corpus_has_no_parent_split_to_pin(tmp_path: Path, tiny_model_dir: Path) -> None:
    other = write_tsv(tmp_path / "other.tsv", toy_pairs(50, seed=3))
    config = load_train_config(Path("configs/tiny.toml"), [f"data.corpora=[{str(other)!r}]"])
    assert prepare.parent_split(tiny_model_dir, config.data) is None


def test_a_pinned_childs_split_is_made_again_without_its_parent(tmp_path: Path, tiny_model_dir: Path) -> None:
    corpus = json.loads((tiny_model_dir / "train_config.json").read_text())["data"]["corpora"][0]
    child = tmp_path / "child"
    other = ["--data.split_seed=99", "--optim.max_steps=2", "--data.dev_size=30"]
    assert main([*TINY, "--corpus", corpus, "--out", str(child), "--init-from", str(tiny_model_dir), *other]) == 0
    report = json.loads((child / DATA_REPORT_FILE).read_text())
    parent_record = json.loads((tiny_model_dir / SPLIT_RECORD_FILE).read_text())
    record = json.loads((child / SPLIT_RECORD_FILE).read_text())
    assert record["dev"] == parent_record["dev"] and record["test"] == parent_record["test"]  # the parent's pairs
    assert report["sha256"]["dev"] == json.loads((tiny_model_dir / DATA_REPORT_FILE).read_text())["sha256"]["dev"]
    shipped = tmp_path / "shipped"  # the child as a model folder: no splits/, and its parent gone
    shutil.copytree(child, shipped, ignore=shutil.ignore_patterns(SPLITS_DIR))
    rebuilt = prepare.model_split(shipped)
    for name in ("train", "dev", "test"):
        assert prepare.pair_lines(getattr(rebuilt, name)) == split_file(child, name).read_text(), name


def test_a_reversed_child_keeps_its_reversed_parents_split(tmp_path: Path, toy_corpus: Path) -> None:
    parent, child = tmp_path / "parent", tmp_path / "child"
    assert main([*tiny_run(toy_corpus, parent), "--data.reverse=true"]) == 0
    assert main([*tiny_run(toy_corpus, child), "--data.reverse=true", "--init-from", str(parent)]) == 0
    for name in ("dev", "test"):
        assert split_file(child, name).read_bytes() == split_file(parent, name).read_bytes()
    held = {
        line.split("\t")[0] for name in ("dev", "test") for line in split_file(child, name).read_text().splitlines()
    }
    train = [line.split("\t")[0] for line in split_file(child, "train").read_text().splitlines()]
    assert train and train[0].startswith("The ") and not held & set(train)  # English first, no dev/test sentence


def test_a_run_from_scratch_keeps_the_dev_and_test_pairs_of_the_model_it_names(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus = json.loads((tiny_model_dir / "train_config.json").read_text())["data"]["corpora"][0]
    shipped = tmp_path / "shipped"  # a model folder: no splits/, only the split's sha256
    shutil.copytree(tiny_model_dir, shipped, ignore=shutil.ignore_patterns(SPLITS_DIR))
    teacher = tmp_path / "teacher"  # another split seed and size, and no --init-from: its own weights and tokenizer
    other = ["--data.split_seed=99", "--data.dev_size=30", "--optim.max_steps=2", f"--data.split_from={shipped}"]
    assert main([*TINY, "--corpus", corpus, "--out", str(teacher), *other]) == 0
    for name in ("dev", "test"):
        assert split_file(teacher, name).read_bytes() == split_file(tiny_model_dir, name).read_bytes(), name
    held = {
        line.split("\t")[0] for name in ("dev", "test") for line in split_file(teacher, name).read_text().splitlines()
    }
    assert held and not held & {line.split("\t")[0] for line in split_file(teacher, "train").read_text().splitlines()}
    skipped = json.loads((teacher / DATA_REPORT_FILE).read_text())["skipped"]
    assert skipped["in the pinned dev or test split"] >= len(held)  # each dev and test pair is a corpus pair left out
    moved = tmp_path / "moved"  # the teacher as a model folder: its split made again and checked by sha256
    shutil.copytree(teacher, moved, ignore=shutil.ignore_patterns(SPLITS_DIR))
    rebuilt = prepare.model_split(moved)
    assert prepare.pair_lines(rebuilt.test) == split_file(tiny_model_dir, "test").read_text()

    with pytest.raises(ConfigError, match="give one"):  # a child already keeps its parent's split
        load_train_config(Path("configs/tiny.toml"), [f"data.split_from={shipped!r}", f"run.init_from={shipped!r}"])
    elsewhere = write_tsv(tmp_path / "other.tsv", toy_pairs(50, seed=3))
    assert main([*TINY, "--corpus", str(elsewhere), "--out", str(tmp_path / "x"), *other]) == 2
    assert "was trained on other corpora" in capsys.readouterr().err
    assert main([*TINY, "--corpus", corpus, "--out", str(tmp_path / "y"), "--data.split_from=nowhere"]) == 2
    assert "data.split_from = 'nowhere': no train_config.json there" in capsys.readouterr().err
    report = json.loads((shipped / DATA_REPORT_FILE).read_text())
    report["sha256"]["test"] = "0" * 64  # its split can no longer be made again
    (shipped / DATA_REPORT_FILE).write_text(json.dumps(report))
    assert main([*TINY, "--corpus", corpus, "--out", str(tmp_path / "z"), *other]) == 2
    err = capsys.readouterr().err
    assert f"{shipped}: its test split read from split.json is not the one" in err and "pin_parent_split" not in err
