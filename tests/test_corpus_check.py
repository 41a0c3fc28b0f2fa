"""Checking a corpus before training, and staging uploads: each bad file gets its message and blocks training."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.corpus import CleanConfig, read_corpus
from lab.corpus_check import (
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
from lab.uploads import max_upload_mb, safe_filename, size_problem, stage_files


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
