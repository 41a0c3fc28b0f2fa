"""Checking a corpus before training, and staging uploads: each bad file gets its message and blocks training."""

from __future__ import annotations

import io
import itertools
import os
import random
import string
import tracemalloc
from pathlib import Path

import pytest

from data.corpus import CleanConfig, Pair, read_corpus, split
from data.data_config import DataConfig
from jobs.corpus_check import (
    MIN_PAIRS,
    CorpusSource,
    check_corpus,
    column_names,
    csv_default_columns,
    csv_header,
    holdout_problem,
    peek_rows,
    relabel_csv,
    write_corpus,
)
from jobs.uploads import (
    CORPUS_DIRS_ENV,
    MAX_NAME,
    corpus_folders,
    folder_problem,
    max_upload_mb,
    safe_filename,
    server_path,
    size_problem,
    stage_files,
)
from translate.settings import REPO_ROOT, RUNS_ENV


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
    check = check_corpus(CorpusSource(path, "tsv", column_names(3, src=2, tgt=1)), CleanConfig())
    assert check.ok and check.sample[0] == ("El perro 0 corre.", "The dog 0 runs.")
    with pytest.raises(ValueError, match="two different columns"):
        column_names(3, 1, 1)


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
    assert DataConfig().clean == CleanConfig()
    assert DataConfig(max_tokens=20).clean.max_tokens == 20


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
    ],
)
def test_file_names_are_sanitised(name: str, safe: str) -> None:
    assert safe_filename(name) == safe


@pytest.mark.parametrize("name", ["a" * 250 + ".csv", "ñ" * 254, "b" * 240 + ".tsv", "c" * 230 + ".anextension12"])
def test_long_upload_names_are_cut_keeping_the_extension_and_a_hash(tmp_path: Path, name: str) -> None:
    safe = safe_filename(name)
    assert len(safe) == MAX_NAME and safe == safe_filename(safe)
    if name.endswith((".csv", ".tsv")):
        assert safe.endswith(name[-4:])
    assert safe_filename(name[:-5] + "x" + name[-4:]) != safe  # differ only near the end: still two files
    staged = stage_files({safe: tsv(30).encode()}, tmp_path) / safe
    assert staged.read_text() == tsv(30)
    if safe.endswith(".csv"):
        staged.write_text("es,en\n" + "".join(f"Hola {i},Hi {i}\n" for i in range(30)))
        assert len(relabel_csv(staged, 0, 1, tmp_path / "csv").name) < 255


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


def test_corpus_folders_default_to_data_and_shared_data_never_the_runs_folder(tmp_path: Path) -> None:
    folders = corpus_folders({RUNS_ENV: str(tmp_path / "runs")})
    expected = (REPO_ROOT / "data", REPO_ROOT.parent / "shared" / "data")
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
    assert f"may read: {os.path.relpath(allowed.resolve(), REPO_ROOT)}. " in problem  # from the repository
    assert f" {allowed}" not in problem and CORPUS_DIRS_ENV in problem  # never the server's path; how to add one
    dotdot = f"{allowed}/../outside/secret.tsv"
    assert "is outside the folders" in (folder_problem(server_path(dotdot), folders, dotdot) or "")
    (allowed / "link.tsv").symlink_to(outside / "secret.tsv")
    problem = folder_problem(server_path(str(allowed / "link.tsv")), folders, str(allowed / "link.tsv"))
    assert problem is not None and problem.startswith(str(allowed / "link.tsv")) and "secret" not in problem


def test_a_moses_side_linked_outside_the_allowed_folders_is_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    write(allowed / "corpus.es", "Hola.\n")
    (allowed / "corpus.en").symlink_to("/etc/passwd")
    for given in ("corpus", "corpus.es"):  # the prefix, or the side that is a real file
        problem = folder_problem(server_path(str(allowed / given)), (allowed.resolve(),), f"mine/{given}")
        assert problem is not None and problem.startswith("mine/corpus.en is outside") and "passwd" not in problem


def test_a_server_path_too_long_for_the_file_system_gets_a_message_not_a_traceback(tmp_path: Path) -> None:
    folders = (tmp_path.resolve(),)
    long_name = f"{tmp_path}/{'x' * 300}.tsv"
    problem = folder_problem(server_path(long_name), folders, long_name)
    assert problem is not None and "is 304 bytes long; a file or folder name may have at most 255" in problem
    deep = f"{tmp_path}/" + "/".join(["y" * 200] * 25) + "/c.tsv"
    problem = folder_problem(server_path(deep), folders, deep)
    assert problem is not None and "a path may have at most 4095" in problem
    edge = f"{tmp_path}/{'z' * 253}"  # fits, but its Moses siblings (.es, .en) would not
    assert "cannot be looked at (File name too long)" in (folder_problem(server_path(edge), folders, edge) or "")


# ----------------------------------------------------------------------------------------- encodings


def test_a_utf16_upload_is_read_as_utf16_and_says_so(tmp_path: Path) -> None:
    path = write(tmp_path / "notepad.tsv", b"\xff\xfe" + tsv(30).replace("\n", "\r\n").encode("utf-16-le"))
    check = check_corpus(CorpusSource(path), CleanConfig())
    assert check.ok and check.kept == 30 and check.fmt == "tsv"
    assert check.sample[0] == ("El perro 0 corre.", "The dog 0 runs.")  # no NUL bytes in any pair
    assert {r.reason for r in check.repaired} == {
        "UTF-16 (little-endian) text, read and converted to UTF-8",
        "CRLF line ending",
    }
    assert peek_rows(path)[0] == ["El perro 0 corre.", "The dog 0 runs."]
    out = write_corpus(CorpusSource(path), CleanConfig(), tmp_path / "run")
    assert out.read_text(encoding="utf-8") == tsv(30)


def test_utf16_without_a_mark_is_refused_naming_utf16(tmp_path: Path) -> None:
    path = write(tmp_path / "no-mark.tsv", tsv(30).encode("utf-16-le"))
    check = check_corpus(CorpusSource(path), CleanConfig())
    assert not check.ok and "looks like UTF-16 (little-endian) text" in check.problems[0]
    assert "save the file as UTF-8" in check.problems[0]


def test_a_utf16_csv_is_relabelled_into_a_utf8_copy(tmp_path: Path) -> None:
    text = "id,english,spanish\n" + "".join(f'{i},"Hi, {i}",Hola {i}\n' for i in range(30))
    path = write(tmp_path / "c.csv", b"\xfe\xff" + text.encode("utf-16-be"))
    assert csv_header(path) == ["id", "english", "spanish"]
    copy = relabel_csv(path, 2, 1, tmp_path / "staging")
    assert copy.read_text(encoding="utf-8").startswith("column1,target,source\n0,")
    check = check_corpus(CorpusSource(copy, "csv"), CleanConfig())
    assert check.ok and check.sample[0] == ("Hola 0", "Hi, 0")


# ----------------------------------------------------------------------------------------- dev and test


def kept_file(pairs: list[tuple[str, str]]) -> io.StringIO:
    return io.StringIO("".join(f"{s}\t{t}\n" for s, t in pairs))


def test_a_corpus_whose_pairs_all_share_a_sentence_is_refused(tmp_path: Path) -> None:
    text = "".join(f"Lo veo {i}.\tI see.\n" for i in range(40))
    check = check_corpus(CorpusSource(write(tmp_path / "one.tsv", text)), CleanConfig())
    assert not check.ok and check.kept == 40
    assert check.problems == (
        "all 40 pairs share the target (en) sentence 'I see.' (up to case and final punctuation), so no pair can be "
        "held out for the dev and test splits (pairs that share a sentence stay together, in training); add pairs "
        "with other sentences",
    )
    pairs = read_corpus(write_corpus(CorpusSource(write(tmp_path / "ok.tsv", tsv(40))), CleanConfig(), tmp_path / "r"))
    assert len(pairs) == 40
    with pytest.raises(ValueError, match="all 40 pairs share"):
        write_corpus(CorpusSource(tmp_path / "one.tsv"), CleanConfig(), tmp_path / "run")
    assert not (tmp_path / "run").exists() and not list(tmp_path.glob(".run*"))  # nothing half-written


def test_pairs_only_in_large_groups_or_a_chain_cannot_be_held_out() -> None:
    groups = [(f"Frase {i}.", f"Sentence {i % 2}.") for i in range(30)]  # two groups of 15
    assert (holdout_problem(kept_file(groups), 30) or "").startswith("none of the 30 pairs can be held out")
    chain = [(f"Frase {(i + 1) // 2}.", f"Sentence {i // 2}.") for i in range(30)]  # each sentence twice: one chain
    assert (holdout_problem(kept_file(chain), 30) or "").startswith("none of the 30 pairs can be held out")
    few = [(f"Frase {i}.", f"Sentence {i // 10 if i < 90 else i}.") for i in range(100)]  # 90 in groups of 10, 10 alone
    problem = holdout_problem(kept_file(few), 100) or ""
    assert "only 10 of the 100 pairs can be held out" in problem and "leaving none for the dev split" in problem
    parts = split([Pair(*p) for p in few], 10, 10)
    assert len(parts.test) == 10 and not parts.dev  # what training would have done


def test_the_dev_test_check_refuses_only_what_the_split_cannot_hold_out() -> None:
    rng, verdicts = random.Random(0), set()
    for _ in range(60):
        n_src, n_tgt = rng.randint(2, 40), rng.randint(2, 40)
        links = {(rng.randrange(n_src), rng.randrange(n_tgt)) for _ in range(rng.randint(20, 80))}
        pairs = [(f"Frase {a}.", f"Sentence {b}.") for a, b in sorted(links)]
        size = max(1, len(pairs) // 10)
        parts = split([Pair(*p) for p in pairs], size, size)
        refused = holdout_problem(kept_file(pairs), len(pairs)) is not None
        assert not (refused and parts.dev and parts.test)  # never refuses a corpus training could split
        assert refused or parts.test  # lets through only what fills test (dev: all but a 3-pair window)
        verdicts.add(refused)
    assert verdicts == {True, False}


# ----------------------------------------------------------------------------------------- memory


def short_lines(n: int, shared: bool) -> str:
    """``n`` different pairs of 4-character words, about 10 bytes a line: the most lines per megabyte."""
    alphabet = string.ascii_lowercase + string.digits  # no capitals: case would merge sentences for the split
    words = ["".join(w) for w in itertools.islice(itertools.product(alphabet, repeat=4), n)]
    return "".join(f"{a}\t{'x' if shared else b}\n" for a, b in zip(words, reversed(words), strict=True))


@pytest.mark.parametrize("shared", [False, True], ids=["different", "one-target"])
def test_checking_many_short_lines_holds_at_most_three_times_the_file(tmp_path: Path, shared: bool) -> None:
    path = write(tmp_path / "short.tsv", short_lines(100_000, shared))
    tracemalloc.start()
    try:
        check = check_corpus(CorpusSource(path), CleanConfig())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert check.kept == 100_000 and check.ok is not shared
    ratio = peak / path.stat().st_size
    assert ratio <= 3, f"peak {peak / 1e6:.1f} MB is {ratio:.1f}x the file"
