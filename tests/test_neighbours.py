"""lab/neighbours: the compact index finds each training sentence itself, the candidates' token neighbours are
a brute-force search over them, the index is saved, found beside the model or in the cache and reused, the pairs
indexed are the model's training pairs, and the background builds end, are cancelled, and are one per model."""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from data.readers import tsv_pairs
from lab.neighbours import index_build as index_build_module
from lab.neighbours.index_build import CANCELLED, IndexBuild
from lab.neighbours.lookup import (
    candidates,
    map_frame,
    marked,
    project,
    query_states,
    sentence_neighbours,
    token_neighbours,
    training_map,
)
from lab.neighbours.sentence_index import (
    NEIGHBOURS_INDEX_FILE,
    SPLIT_RECORD_FILE,
    NeighboursError,
    Progress,
    build,
    capped,
    compact,
    index_path,
    load,
    load_or_build,
    save,
    training_pairs,
    weights_sha256,
)
from model.run_dir import SPLITS_DIR, TRAIN_CONFIG_FILE, WEIGHTS_FILE, split_file
from translate.settings import REPO_ROOT
from translate.translator import DEFAULT_MODEL, Translator
from views import heavy_slot, neighbours_tab


@pytest.fixture(scope="module")
def translator(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def no_progress(done: int, total: int) -> None:
    pass


def test_the_compact_index_finds_each_training_sentence_itself(translator: Translator, tiny_model_dir: Path) -> None:
    index, vectors = build(translator, tiny_model_dir, no_progress)
    pairs = list(tsv_pairs(split_file(tiny_model_dir, "train")))
    assert index.info.pairs == len(pairs) == len(index.sources) == len(vectors) and index.codes.dtype == np.int8
    assert index.info.dims == translator.model.config.d_model == 32  # DIMS (64) is above the tiny d_model
    assert index.info.model == os.path.relpath(tiny_model_dir.resolve(), REPO_ROOT)  # never an absolute path
    for row, pair in enumerate(pairs):  # by the compact index alone: itself, or a pair with the same Spanish
        assert index.sources[int(np.argmax(index.similarities(vectors[row])))] == pair.src
    for dims in (8, 16):  # fewer directions than the model has: itself among the candidates still
        small = replace(index, **dict(zip(("codes", "basis", "scale"), compact(vectors, dims), strict=True)))
        for row in range(len(pairs)):
            best = np.argsort(-small.similarities(vectors[row]), kind="stable")[:16]
            assert pairs[row].src in {index.sources[r] for r in best}
    for pair in pairs[:: len(pairs) // 6]:
        translation = translator.translate(pair.src)  # the source translated: its encoder states
        own = translator.tokenizer.encode_tgt(pair.tgt)  # teacher-forced on its own English: its decoder states
        vector, states = query_states(translator.model, translation.src_ids, own)
        found = candidates(index, translator, vector)
        for position in range(len(own) - 1):
            sentence, token = sentence_neighbours(found, vector), token_neighbours(found, states[position])
            assert index.sources[sentence[0].pair] == pair.src and sentence[0].similarity > 0.999
            mine = [n for n in token if (index.sources[n.pair], index.targets[n.pair]) == (pair.src, pair.tgt)]
            assert mine and mine[0].position == position  # its own state, or a tie with a pair of the same prefix
            assert mine[0].similarity > 0.999 and mine[0].similarity >= token[0].similarity - 1e-4
            assert len(sentence) == len(token) == 8 and len({n.pair for n in token}) == 8  # a pair once


def test_neighbours_are_a_brute_force_search_over_the_candidates(translator: Translator, tiny_model_dir: Path) -> None:
    index, vectors = build(translator, tiny_model_dir, no_progress)
    model, tokenizer = translator.model, translator.tokenizer
    translation = translator.translate("El perro verde 7.")
    tokens = translation.best.tokens
    vector, states = query_states(model, translation.src_ids, tokens)
    for n in (16, 10_000):  # a few, and more than there are: every pair
        found = candidates(index, translator, vector, n)
        assert len(found.pairs) == len(set(found.pairs.tolist())) == min(n, index.info.pairs)
        assert list(found.pairs) == list(np.argsort(-index.similarities(vector), kind="stable")[:n])
        alone = [  # each candidate on its own, not in a batch: its encoder vector and every decoder state
            query_states(model, tokenizer.encode_src(index.sources[r]), tokenizer.encode_tgt(index.targets[r]))
            for r in found.pairs
        ]
        assert np.allclose(vectors[found.pairs], [v for v, _ in alone], atol=1e-5)  # the index's, batched
        assert np.allclose(found.vectors, vectors[found.pairs], atol=1e-5)
        q = vector / np.linalg.norm(vector)
        exact = np.array([v.astype(np.float64) @ q for v, _ in alone])
        expected = [int(found.pairs[i]) for i in np.argsort(-exact, kind="stable")[:8]]
        shown = sentence_neighbours(found, vector)
        assert [n.pair for n in shown] == expected
        assert np.allclose([n.similarity for n in shown], np.sort(exact)[::-1][:8], atol=1e-5)
        for position in range(len(tokens) - 1):
            q = states[position] / np.linalg.norm(states[position])
            best = [(float((s.astype(np.float64) @ q).max()), int((s @ q).argmax())) for _, s in alone]
            order = sorted(range(len(best)), key=lambda i: -best[i][0])[:8]
            shown = token_neighbours(found, states[position])
            assert [n.pair for n in shown] == [int(found.pairs[i]) for i in order]
            assert [n.position for n in shown] == [best[i][1] for i in order]
            assert np.allclose([n.similarity for n in shown], [best[i][0] for i in order], atol=1e-5)


def test_the_index_is_saved_found_and_reused(translator: Translator, tiny_model_dir: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    first, loaded = load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: calls.append(a))
    assert not loaded and calls[-1] == (first.info.pairs, first.info.pairs)
    cache = index_path(tiny_model_dir, tmp_path, first.info.weights_sha256)
    assert cache.is_file() and cache.parent == tmp_path / "neighbours"  # the model folder is outside the runs
    assert cache.name.endswith(NEIGHBOURS_INDEX_FILE) and not (tiny_model_dir / NEIGHBOURS_INDEX_FILE).exists()
    assert cache.stat().st_size < 60 * first.info.pairs + 20_000  # int8 codes and compressed texts
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no partial file left
    calls.clear()
    second, loaded = load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: calls.append(a))
    assert loaded and not calls and second.info == first.info and second.targets == first.targets
    assert np.array_equal(second.codes, first.codes) and np.array_equal(second.basis, first.basis)
    save(replace(first, info=replace(first.info, weights_sha256="0" * 64)), cache)  # built from other weights
    assert not load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: None)[1]
    cache.write_bytes(b"not an index")
    with pytest.raises(NeighboursError, match="not a sentence index"):
        load(cache)
    assert not load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: None)[1]  # built again over it


def test_an_index_beside_the_model_is_read_and_never_written(
    translator: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    shipped = tmp_path / "shipped"  # a model folder outside the runs folder, holding its index (as es-en does)
    shutil.copytree(tiny_model_dir, shipped)
    index, _ = build(translator, shipped, no_progress)
    save(index, shipped / NEIGHBOURS_INDEX_FILE)
    runs = tmp_path / "runs"
    found, loaded = load_or_build(translator, shipped, runs, lambda *a: pytest.fail("built"))
    assert loaded and found.info == index.info and not runs.exists()
    save(replace(index, info=replace(index.info, weights_sha256="0" * 64)), shipped / NEIGHBOURS_INDEX_FILE)
    before = (shipped / NEIGHBOURS_INDEX_FILE).read_bytes()
    assert not load_or_build(translator, shipped, runs, no_progress)[1]  # stale: built into the cache instead
    assert (shipped / NEIGHBOURS_INDEX_FILE).read_bytes() == before and len(list((runs / "neighbours").iterdir())) == 1


def test_saves_at_once_never_share_a_partial_file(translator: Translator, tiny_model_dir: Path, tmp_path: Path) -> None:
    index, _ = build(translator, tiny_model_dir, no_progress)
    path = tmp_path / "one" / NEIGHBOURS_INDEX_FILE
    errors: list[BaseException] = []

    def write() -> None:
        try:
            save(index, path)
        except BaseException as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=write) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and load(path).codes.shape == index.codes.shape
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_run_in_the_runs_folder_keeps_its_index_beside_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "mine").mkdir(parents=True)
    assert index_path(runs / "mine", runs, "ab") == (runs / "mine" / NEIGHBOURS_INDEX_FILE).resolve()
    assert index_path(tmp_path / "shipped", runs, "ab") == runs.resolve() / "neighbours" / f"ab.{NEIGHBOURS_INDEX_FILE}"


def test_a_folder_without_splits_indexes_the_training_pairs_its_record_gives_back(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model, ignore=shutil.ignore_patterns(SPLITS_DIR))
    run, found = training_pairs(tiny_model_dir), training_pairs(model)
    assert "splits/train.tsv" in run.origin and SPLIT_RECORD_FILE in found.origin
    assert sorted((p.src, p.tgt) for p in found.pairs) == sorted((p.src, p.tgt) for p in run.pairs)
    assert len(training_pairs(model, cap=1).pairs) == 1 and found.available == run.available
    (model / TRAIN_CONFIG_FILE).unlink()
    with pytest.raises(NeighboursError, match=r"no splits/ and no train_config.json"):
        training_pairs(model)


def test_a_capped_sample_is_fixed_and_in_order() -> None:
    items = list(range(100))
    assert capped(items, 10) == capped(items, 10) == sorted(capped(items, 10)) and len(set(capped(items, 10))) == 10
    assert capped(items, 200) == items


def test_marked_puts_the_token_between_marks(translator: Translator) -> None:
    text = "The red cat 3."
    pieces = translator.tokenizer.tgt_pieces(translator.tokenizer.encode_tgt(text))
    for position in range(len(pieces) - 1):
        shown = marked(translator.tokenizer, text, position)
        assert shown.replace("⟦", "").replace("⟧", "") == text
        assert shown.split("⟦")[1].split("⟧")[0] == pieces[position].lstrip("▁")


def test_the_background_build_ends_with_an_index_or_an_error(
    translator: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    build = IndexBuild(translator, tiny_model_dir, tmp_path).start()
    assert build.wait(timeout=60) and build.finished and build.error is None
    assert build.index is not None and build.done == build.total == build.index.info.pairs and not build.loaded
    again = IndexBuild(translator, tiny_model_dir, tmp_path).start()
    assert again.wait(timeout=60) and again.loaded and again.index is not None
    empty = tmp_path / "empty"  # weights, but no training pairs to index
    empty.mkdir()
    shutil.copy(tiny_model_dir / WEIGHTS_FILE, empty)
    failed = IndexBuild(translator, empty, tmp_path).start()
    assert failed.wait(timeout=60) and failed.index is None and "no splits/" in (failed.error or "")


def endless(translator: Translator, model_dir: Path, runs: Path, progress: Progress) -> None:
    """A build that never ends unless cancelled: it reports progress every 10 ms."""
    done = 0
    while True:
        progress(done, 10**9)
        done += 1
        time.sleep(0.01)


def alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("neighbours ")]


def test_a_cancelled_build_stops_with_nothing_saved_and_gives_an_eta(
    translator: Translator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_build_module, "load_or_build", endless)
    build = IndexBuild(translator, tmp_path, tmp_path).start()
    deadline = time.monotonic() + 10
    while build.done < 5:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert build.eta is not None and build.eta > 1e6  # a billion pairs at ~100 a second
    build.cancel()
    assert build.wait(timeout=5) and build.error == CANCELLED and build.index is None


def test_the_page_keeps_one_build_per_model_and_cancels_the_ones_it_drops(
    translator: Translator, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_build_module, "load_or_build", endless)
    monkeypatch.setattr(neighbours_tab, "KEPT", 2)
    known = neighbours_tab.builds()[1]
    known.clear()
    models = [str(tmp_path / name) for name in ("a", "b", "c")]
    started = []
    for _ in range(3):  # a session cycling three models, three times
        for model in models:
            started.append(neighbours_tab.index_build(model, translator))
            assert neighbours_tab.index_build(model, translator) is started[-1]  # asked again: the same build
    assert len(known) == 2 and list(known) == models[1:]
    dropped = [b for b in started if b not in known.values()]
    assert all(b.wait(timeout=5) and b.error == CANCELLED for b in dropped)
    assert len(alive()) == 2
    old = known[models[2]]
    new = neighbours_tab.index_build(
        models[2], Translator.load(tiny_model_dir)
    )  # its weights changed: the model was loaded again
    assert new is not old and old.wait(timeout=5) and old.error == CANCELLED and len(alive()) == 2
    for b in known.values():
        b.cancel()
    assert all(b.wait(timeout=5) for b in known.values())
    known.clear()


def test_a_page_build_holds_a_heavy_slot_and_lets_a_request_in_between_batches(
    translator: Translator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_build_module, "load_or_build", endless)
    neighbours_tab.builds()[1].clear()
    build = neighbours_tab.index_build(str(tmp_path / "a"), translator)
    deadline = time.monotonic() + 10
    while build.done < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert heavy_slot.asking() == 1  # the build holds the server's one slot
    ran = threading.Event()
    with heavy_slot.slot():  # another visitor's request: it gets in between two batches
        ran.set()
        during = build.done
        time.sleep(0.05)
        assert build.done == during  # the build waits while the request runs
    assert ran.is_set() and not build.finished
    build.cancel()
    assert build.wait(timeout=5) and build.error == CANCELLED and heavy_slot.asking() == 0
    neighbours_tab.builds()[1].clear()


def test_the_shipped_model_ships_its_index_built_from_its_weights() -> None:
    """Remade by ``python -m workshop neighbours-index`` whenever the shipped weights change."""
    path = DEFAULT_MODEL / NEIGHBOURS_INDEX_FILE
    index = load(path)
    assert index.info.weights_sha256 == weights_sha256(DEFAULT_MODEL) and index.info.pairs == len(index.sources)
    assert index.info.pairs == index.info.available == 118_825 and index.codes.shape == (118_825, 64)
    assert path.stat().st_size < 12_000_000
    assert index.info.model == "checkpoints/es-en"  # from the repository, never the build machine's own path


def test_a_training_pair_lands_on_its_own_point_of_the_map(translator: Translator, tiny_model_dir: Path) -> None:
    index, _ = build(translator, tiny_model_dir, no_progress)
    fit = project(index)
    assert len(fit.rows) == index.info.pairs and fit.points.shape == (index.info.pairs, 2)  # few pairs: all drawn
    assert 0 < fit.explained <= 1 and np.allclose(fit.of_rows(index, fit.rows), fit.points, atol=1e-5)
    spread = float(np.ptp(fit.points, axis=0).max())
    for row in fit.rows[:: max(1, len(fit.rows) // 8)]:  # its source read as a new sentence: its own point
        translation = translator.translate(index.sources[row])
        vector, _ = query_states(translator.model, translation.src_ids, translation.best.tokens)
        assert np.linalg.norm(fit.place(index, vector) - fit.points[row]) < 0.02 * spread  # up to int8 rounding


def test_the_map_draws_a_fixed_sample_of_at_most_its_bound(translator: Translator, tiny_model_dir: Path) -> None:
    index, _ = build(translator, tiny_model_dir, no_progress)
    small, again = project(index, max_points=10, seed=3), project(index, max_points=10, seed=3)
    assert len(small.rows) == 10 and np.array_equal(small.rows, again.rows) and np.all(np.diff(small.rows) > 0)
    assert np.allclose(small.axes, project(index).axes)  # the axes are fitted on every pair, not on the sample
    assert np.allclose(small.points, project(index).points[small.rows])
    frame = map_frame(small.points, [index.sources[r] for r in small.rows], [index.targets[r] for r in small.rows])
    layers = training_map(frame, "map", "Spanish", "English").to_dict()["layer"]
    assert len(layers) == 3 and list(frame["words"]) == [len(index.sources[r].split()) for r in small.rows]
