"""lab/neighbours: a training pair is its own nearest neighbour (encoder and decoder), the index is cached and
reused, the pairs indexed are the model's training pairs, and the background build ends with an index."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from data.readers import tsv_pairs
from lab.neighbours.hidden_states import kept_positions
from lab.neighbours.index_build import IndexBuild
from lab.neighbours.lookup import marked, nearest, neighbours_of
from lab.neighbours.state_index import INDEX_FILE, index_path, load, load_or_build, save
from lab.neighbours.training_pairs import SPLIT_RECORD_FILE, NeighboursError, capped, training_pairs
from model.run_dir import SPLITS_DIR, TRAIN_CONFIG_FILE, WEIGHTS_FILE, split_file
from translate.translator import Translator


@pytest.fixture(scope="module")
def translator(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def test_a_training_pair_is_its_own_nearest_neighbour_by_encoder_and_decoder(
    translator: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    index, _ = load_or_build(translator, tiny_model_dir, tmp_path, lambda done, total: None)
    pairs = list(tsv_pairs(split_file(tiny_model_dir, "train")))
    assert index.info.pairs == len(pairs) == len(index.sources)
    for pair in pairs[:: len(pairs) // 6]:
        translation = translator.translate(pair.src)  # the source translated: its encoder states
        own = translator.tokenizer.encode_tgt(pair.tgt)  # teacher-forced on its own English: its decoder states
        for position in kept_positions(len(own)):
            sentence, token = neighbours_of(index, translator.model, translation.src_ids, own, position)
            assert index.sources[sentence[0].pair] == pair.src and sentence[0].similarity > 0.999
            mine = [n for n in token if (index.sources[n.pair], index.targets[n.pair]) == (pair.src, pair.tgt)]
            assert mine and mine[0].position == position  # its own state, or a tie with a pair of the same prefix
            assert mine[0].similarity > 0.999 and mine[0].similarity >= token[0].similarity - 1e-4
            assert len(sentence) == len(token) == 8 and len({n.pair for n in token}) == 8  # a pair once


def test_the_index_is_cached_and_a_second_build_is_a_load(
    translator: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    calls: list[tuple[int, int]] = []
    first, loaded = load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: calls.append(a))
    assert not loaded and calls[-1] == (first.info.pairs, first.info.pairs)
    cache = index_path(tiny_model_dir, tmp_path, first.info.weights_sha256)
    assert cache.is_file() and cache.parent == tmp_path / "neighbours"  # the model folder is outside the runs
    assert not (tiny_model_dir / INDEX_FILE).exists()
    calls.clear()
    second, loaded = load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: calls.append(a))
    assert loaded and not calls and second.info == first.info
    assert np.array_equal(second.decoder, first.decoder) and second.targets == first.targets
    assert first.encoder.dtype == first.decoder.dtype == np.float16
    save(replace(first, info=replace(first.info, weights_sha256="0" * 64)), cache)  # built from other weights
    assert not load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: None)[1]
    cache.write_bytes(b"not an index")
    with pytest.raises(NeighboursError, match="not a neighbour index"):
        load(cache)
    assert not load_or_build(translator, tiny_model_dir, tmp_path, lambda *a: None)[1]  # built again over it


def test_a_run_in_the_runs_folder_keeps_its_index_beside_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "mine").mkdir(parents=True)
    assert index_path(runs / "mine", runs, "ab") == (runs / "mine" / INDEX_FILE).resolve()
    assert index_path(tmp_path / "shipped", runs, "ab") == runs.resolve() / "neighbours" / "ab.npz"


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


@pytest.mark.parametrize("length", [1, 2, 3, 5, 6, 20])
def test_kept_positions_spread_over_the_words(length: int) -> None:
    kept = kept_positions(length, 4)
    assert kept == sorted(set(kept)) and 1 <= len(kept) <= 4 and kept[0] == 0
    assert kept[-1] == max(length - 2, 0)  # the last word piece (EOS only when it is alone)


def test_nearest_is_the_brute_force_cosine_order() -> None:
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((500, 16))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rng.standard_normal(16)
    found, sims = nearest(rows.astype(np.float16), query, 5)
    exact = rows @ (query / np.linalg.norm(query))
    assert set(found) <= set(np.argsort(-exact)[:7]) and found[0] == np.argmax(exact)
    assert np.allclose(sims, exact[found], atol=2e-3) and list(sims) == sorted(sims, reverse=True)


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
    assert build.index is not None and build.done == build.total == build.index.info.pairs
    empty = tmp_path / "empty"  # weights, but no training pairs to index
    empty.mkdir()
    shutil.copy(tiny_model_dir / WEIGHTS_FILE, empty)
    failed = IndexBuild(translator, empty, tmp_path).start()
    assert failed.wait(timeout=60) and failed.index is None and "no splits/" in (failed.error or "")
