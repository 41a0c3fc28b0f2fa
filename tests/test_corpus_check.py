"""Checking a corpus before training, and staging uploads: each bad file gets its message and blocks training."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from data.corpus import CleanConfig, read_corpus
from model.run_dir import REPO_ROOT, RUNS_ENV
from training_jobs.corpus_check import (
    MIN_PAIRS,
    CorpusSource,
    check_corpus,
    clean_config_of,
    csv_default_columns,
    csv_header,
    relabel_csv,
    tsv_columns,
    write_corpus,
)
from training_jobs.uploads import (
    CORPUS_DIRS_ENV,
    corpus_folders,
    folder_problem,
    max_upload_mb,
    safe_filename,
    server_path,
    size_problem,
    stage_files,
)


def tsv(n: int, start: int = 0) -> str:
    return "".join(f"El perro {i} corre.\tThe dog {i} runs.\n" for i in range(start, start + n))


def write(path: Path, content: str | bytes) -> Path:
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


def test_a_valid_corpus_reports_counts_lengths_and_samples(tmp_path: Path) -> None:
    text = tsv(40) + "sin traducción\n" + tsv(1) + "\tThe empty side.\n"  # one bad line, one duplicate, one empty
    check = check_corpus(CorpusSource(write(tmp_path / "c.tsv", text)), CleanConfig())
    assert check.ok and check.fmt == "tsv"
    assert (check.read, check.kept) == (43, 40)
    reasons = {r.reason: r for r in check.skipped}
    assert reasons["wrong number of fields"].examples == (f"{tmp_path / 'c.tsv'}:41",)
    assert set(reasons) == {"wrong number of fields", "duplicate pair", "empty side"}
    source, target = check.lengths
    assert (source.min, source.max, target.min, target.max) == (4, 4, 4, 4)
    assert 0 < len(check.sample) <= 8 and check.sample[0] == ("El perro 0 corre.", "The dog 0 runs.")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.tsv", "", "file is empty"),
        ("binary.tsv", bytes(range(128, 256)) * 40 + b"\n" + bytes(range(128, 256)) * 40, "could not be read"),
        ("one-column.tsv", "".join(f"Solo español {i}.\n" for i in range(30)), "could not be read"),
        ("few.tsv", tsv(5), f"only 5 usable pairs after cleaning; training needs at least {MIN_PAIRS}"),
        ("header.csv", "a,b\n" + "".join(f"x{i},y{i}\n" for i in range(30)), "header must name"),
    ],
)
def test_each_kind_of_bad_file_is_refused_with_its_reason(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    check = check_corpus(CorpusSource(write(tmp_path / name, content)), CleanConfig())
    assert not check.ok
    assert any(message in problem for problem in check.problems), check.problems


def test_misaligned_line_files_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "c.es", "".join(f"Hola {i}.\n" for i in range(30)))
    write(tmp_path / "c.en", "".join(f"Hello {i}.\n" for i in range(29)))
    check = check_corpus(
        CorpusSource(tmp_path / "c", "moses", shown_as=((str(tmp_path / "c.es"), "mine.es"),)), CleanConfig()
    )
    assert not check.ok and "mine.es has 30 lines" in check.problems[0]


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = write(tmp_path / "big.tsv", tsv(200))
    check = check_corpus(CorpusSource(path), CleanConfig(), max_bytes=1024)
    assert not check.ok and "over the 0 MB limit" in check.problems[0] and check.read == 0


def test_chosen_tsv_columns_decide_source_and_target(tmp_path: Path) -> None:
    text = "".join(f"{i}\tThe dog {i} runs.\tEl perro {i} corre.\n" for i in range(30))
    path = write(tmp_path / "three.tsv", text)
    check = check_corpus(CorpusSource(path, "tsv", tsv_columns(3, src=2, tgt=1)), CleanConfig())
    assert check.ok and check.sample[0] == ("El perro 0 corre.", "The dog 0 runs.")
    with pytest.raises(ValueError, match="two different columns"):
        tsv_columns(3, 1, 1)


def test_csv_columns_are_chosen_through_a_relabelled_copy(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "id,english,spanish\n" + "".join(f'{i},"Hi, {i}",Hola {i}\n' for i in range(30)))
    header = csv_header(path)
    assert csv_default_columns(header) == (2, 1)
    assert csv_default_columns(["x", "y", "z"]) == (0, 1)
    copy = relabel_csv(path, 2, 1, tmp_path / "staging")
    assert csv_header(copy) == ["column1", "target", "source"]
    check = check_corpus(CorpusSource(copy, "csv", shown_as=((str(copy), "c.csv"),)), CleanConfig())
    assert check.ok and check.sample[0] == ("Hola 0", "Hi, 0")


def test_write_corpus_writes_the_kept_pairs_training_will_read(tmp_path: Path) -> None:
    path = write(tmp_path / "c.tsv", tsv(30) + tsv(5))  # five duplicates
    out = write_corpus(CorpusSource(path), CleanConfig(), tmp_path / "run")
    pairs = read_corpus(out, "tsv")
    assert len(pairs) == 30 and (tmp_path / "run" / "corpus_check.json").is_file()
    with pytest.raises(ValueError, match="usable pairs"):
        write_corpus(CorpusSource(write(tmp_path / "few.tsv", tsv(3))), CleanConfig(), tmp_path / "run2")


def test_clean_filters_come_from_the_preset() -> None:
    assert clean_config_of({}) == CleanConfig()
    assert clean_config_of({"data": {"max_tokens": 20}}).max_tokens == 20


# ----------------------------------------------------------------------------------------- uploads


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("corpus.tsv", "corpus.tsv"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\spa eng (1).csv", "spa_eng_1_.csv"),
        (".hidden.tsv", "hidden.tsv"),
        ("ñandú.tsv", "nandu.tsv"),
        ("", "corpus.txt"),
        ("...", "corpus.txt"),
        ("a" * 300 + ".csv", "a" * 96 + ".csv"),
    ],
)
def test_file_names_are_sanitised(name: str, safe: str) -> None:
    assert safe_filename(name) == safe


def test_upload_limit_is_configurable_and_explained() -> None:
    assert max_upload_mb({}) == 200
    assert max_upload_mb({"LAB_MAX_UPLOAD_MB": "5"}) == 5
    assert max_upload_mb({"LAB_MAX_UPLOAD_MB": "lots"}) == 200
    assert size_problem(5 * 1024 * 1024, 5, "x.tsv") is None
    message = size_problem(5 * 1024 * 1024 + 1, 5, "x.tsv")
    assert message and "x.tsv" in message and "5 MB limit" in message


def test_staging_is_keyed_by_content_and_refuses_unsafe_names(tmp_path: Path) -> None:
    first = stage_files({"a.tsv": b"1\t2\n"}, tmp_path)
    assert stage_files({"a.tsv": b"1\t2\n"}, tmp_path) == first
    assert stage_files({"a.tsv": b"3\t4\n"}, tmp_path) != first
    assert (first / "a.tsv").read_bytes() == b"1\t2\n"
    with pytest.raises(ValueError, match="unsafe"):
        stage_files({"../a.tsv": b""}, tmp_path)


# ----------------------------------------------------------------------------------------- paths on the server


def test_corpus_folders_default_to_runs_data_and_shared_data(tmp_path: Path) -> None:
    folders = corpus_folders({RUNS_ENV: str(tmp_path / "runs")})
    expected = (tmp_path / "runs", REPO_ROOT / "data", REPO_ROOT.parent / "shared" / "data")
    assert folders == tuple(p.resolve() for p in expected)
    assert all(folder.is_absolute() for folder in folders)


def test_corpus_folders_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    value = os.pathsep.join([str(tmp_path / "a"), "", "~/b", str(tmp_path / "a" / ".." / "a")])
    assert corpus_folders({CORPUS_DIRS_ENV: value}) == ((tmp_path / "a").resolve(), (tmp_path / "home" / "b").resolve())


def test_server_paths_are_resolved_and_relative_ones_start_at_the_repository(tmp_path: Path) -> None:
    assert server_path(f"  {tmp_path}/x/../y.tsv ") == (tmp_path / "y.tsv").resolve()
    assert server_path("data/everyday-es-en.tsv") == (REPO_ROOT / "data" / "everyday-es-en.tsv").resolve()


def test_only_files_inside_the_allowed_folders_may_be_read(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    folders = (allowed.resolve(),)
    write(allowed / "ok.tsv", tsv(30))
    write(outside / "secret.tsv", tsv(30))
    assert folder_problem(server_path(str(allowed / "ok.tsv")), folders) is None
    assert folder_problem(server_path(str(allowed / "not-yet.tsv")), folders) is None  # missing: the reader says so

    problem = folder_problem(server_path("/etc/passwd"), folders, "/etc/passwd")
    assert problem is not None and problem.startswith("/etc/passwd is outside the folders")
    assert str(allowed.resolve()) in problem and CORPUS_DIRS_ENV in problem  # says what is allowed and how to add
    dotdot = f"{allowed}/../outside/secret.tsv"
    assert "is outside the folders" in (folder_problem(server_path(dotdot), folders, dotdot) or "")
    (allowed / "link.tsv").symlink_to(outside / "secret.tsv")
    problem = folder_problem(server_path(str(allowed / "link.tsv")), folders, str(allowed / "link.tsv"))
    assert problem is not None and f"resolves to {(outside / 'secret.tsv').resolve()}" in problem


def test_a_moses_side_linked_outside_the_allowed_folders_is_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    write(allowed / "corpus.es", "Hola.\n")
    (allowed / "corpus.en").symlink_to("/etc/passwd")
    for given in ("corpus", "corpus.es"):  # the prefix, or the side that is a real file
        problem = folder_problem(server_path(str(allowed / given)), (allowed.resolve(),))
        assert problem is not None and "corpus.en" in problem and "/etc/passwd" in problem
