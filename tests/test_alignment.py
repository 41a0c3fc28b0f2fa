"""Alignment scoring against gold: the scorer by hand, gold words <-> subwords, baselines, readings, the bench."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from data.alignments import eflomal_links, grow_diag_final_and
from data.tokenizer import WORD_START, Tokenizer
from lab.alignment.methods import Method, forced_pair
from lab.alignment.scoring import (
    GoldFormatError,
    column_argmax,
    detokenize,
    piece_words,
    read_gold,
    row_argmax,
    score,
    subword_argmax,
    threshold,
    word_matrix,
)
from workshop.bench.alignment import diagonal, tokenize

SHIPPED = Path(__file__).resolve().parent.parent / "checkpoints" / "es-en"

# --- the scorer ---


def test_precision_recall_and_aer_by_hand() -> None:
    predicted = [{(0, 0), (1, 1), (2, 1)}]
    gold = [{(0, 0), (1, 2), (2, 1), (3, 3)}]
    result = score(predicted, gold)
    assert (result.correct, result.predicted, result.gold) == (2, 3, 4)
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == pytest.approx(2 / 4)
    f1 = 2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2)
    assert result.aer == pytest.approx(1 - f1) == pytest.approx(1 - 4 / 7)


def test_links_are_counted_over_the_whole_set_not_averaged_per_sentence() -> None:
    result = score([{(0, 0)}, {(0, 0), (1, 1), (2, 2)}], [{(0, 0)}, {(0, 1), (1, 1), (2, 0)}])
    assert (result.precision, result.recall) == (pytest.approx(2 / 4), pytest.approx(2 / 4))
    assert score([set()], [{(0, 0)}]).aer == 1.0
    assert score([{(0, 0)}], [{(0, 0)}]).aer == 0.0
    with pytest.raises(ValueError, match="1 predicted alignments for 2 gold"):
        score([set()], [set(), set()])


def test_gold_file_is_read_with_english_first_and_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    good = tmp_path / "gold.tsv"
    good.write_text("The red cat .\tEl gato rojo .\t0-0 1-2 2-1 3-3\nHi\tHola\t\n", encoding="utf-8")
    first, second = read_gold(good)
    assert first.target == ["The", "red", "cat", "."] and first.source == ["El", "gato", "rojo", "."]
    assert first.links == {(0, 0), (1, 2), (2, 1), (3, 3)} and second.links == frozenset()
    for line, message in [("a\tb\n", "3 tab-separated"), ("a\tb\t0-x\n", "integer"), ("a\tb\t0-1\n", "points past")]:
        bad = tmp_path / "bad.tsv"
        bad.write_text("The cat\tEl gato\t0-0\n" + line, encoding="utf-8")
        with pytest.raises(GoldFormatError, match=f"bad.tsv:2: .*{message}"):
            read_gold(bad)


# --- gold tokens <-> running text <-> subwords ---


def test_detokenize_glues_punctuation_and_tokenize_splits_it_back() -> None:
    tokens = ["He", "said", ",", '"', "Moon's", "core", "(", "70%", ")", "is", "molten", '"', "."]
    text, starts = detokenize(tokens)
    assert text == 'He said, "Moon\'s core (70%) is molten".'
    assert [text[s : s + len(t)] for s, t in zip(starts, tokens, strict=True)] == tokens
    assert tokenize(text) == tokens
    assert tokenize("¿Vienes, Sr. Gómez...?") == ["¿", "Vienes", ",", "Sr.", "Gómez", "...", "?"]
    assert tokenize("the U.S. and e.g. this.") == ["the", "U.S.", "and", "e.g.", "this", "."]


def test_every_subword_maps_to_the_gold_word_it_spells() -> None:
    sp = Tokenizer.load(SHIPPED).src
    tokens = ["Analyses", "of", "the", "Moon's", "rotations", "(", "1906", ")", "indicate", "it", "."]
    ids, words = piece_words(sp, tokens)
    text, _ = detokenize(tokens)
    assert ids == sp.encode(text)  # exactly what the model is fed
    pieces = [sp.id_to_piece(i) for i in ids]
    spelled = ["".join(p for p, w in zip(pieces, words, strict=True) if w == k) for k in range(len(tokens))]
    assert [s.replace(WORD_START, "") for s in spelled] == tokens
    assert words == sorted(words)  # subwords never jump back to an earlier word


def test_word_matrix_sums_source_subwords_and_averages_target_subwords() -> None:
    rows = np.array([[0.5, 0.2, 0.3], [0.1, 0.6, 0.3], [0.0, 0.0, 1.0]])  # 3 target x 3 source subwords
    merged = word_matrix(rows, target_words=[0, 0, 2], source_words=[0, 1, 1], n_target=3, n_source=2)
    np.testing.assert_allclose(merged, [[0.3, 0.7], [0.0, 0.0], [0.0, 1.0]])  # word 1 has no subword of its own
    assert row_argmax(merged) == {(0, 1), (2, 1)}  # no link for the word without a row


# --- extraction ---


def test_diagonal_links_each_target_word_to_the_same_relative_source_position() -> None:
    assert diagonal(3, 5) == {(0, 0), (1, 2), (2, 4)}
    assert diagonal(4, 2) == {(0, 0), (1, 0), (2, 1), (3, 1)}
    assert diagonal(1, 3) == {(0, 0)}
    assert diagonal(5, 2) == {(0, 0), (1, 0), (2, 0), (3, 1), (4, 1)}  # 0.5 rounds to even, as in the gold's README


def test_row_and_column_argmax_threshold_and_intersection() -> None:
    weights = np.array([[0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.0, 0.0, 0.0]])
    assert row_argmax(weights) == {(0, 0), (1, 0)}
    assert column_argmax(weights) == {(0, 0), (1, 1), (0, 2)}  # a tie goes to the first row
    assert threshold(weights, 0.4) == {(0, 0), (1, 0), (1, 1)}
    assert threshold(np.array([[0.2, 0.2, 0.0]]), 0.5) == {(0, 0), (0, 1)}  # shares of the row's real weight


def test_grow_diag_final_and_by_hand() -> None:
    forward = {(0, 0), (1, 1), (3, 0), (5, 5)}
    backward = {(0, 0), (1, 1), (0, 1), (2, 2)}
    # (2, 2) grows diagonally from (1, 1) (new row); (0, 1) joins two aligned words: refused;
    # (3, 0) is not next to the alignment and its column is taken; (5, 5) is all alone: added at the end.
    assert grow_diag_final_and(forward, backward) == {(0, 0), (1, 1), (2, 2), (5, 5)}
    assert grow_diag_final_and(set(), set()) == set()


def test_shift_att_reads_the_row_where_the_word_is_the_decoder_input() -> None:
    # output pieces y1 y2 y3 </s>; source pieces x1 x2 x3 </s>. Row t is computed at input BOS, y1, y2, y3.
    cross = np.array(
        [
            [0.1, 0.7, 0.1, 0.1],  # input BOS, predicts y1 -> x2
            [0.6, 0.1, 0.1, 0.2],  # input y1 -> x1
            [0.0, 0.1, 0.2, 0.7],  # input y2 -> x3 once the source EOS (0.7) is left out
            [0.1, 0.8, 0.0, 0.1],  # input y3, predicts </s> -> x2
        ]
    )[None, None]  # (L=1, H=1, T=4, S=4)
    words = [0, 1, 2]
    assert subword_argmax(cross[0, 0, 1:, :-1], words, words) == {(0, 0), (1, 2), (2, 1)}
    pair = forced_pair(cross, words, words, (3, 3))
    assert Method("Shift-Att", 0, None, "shift").links(pair) == {(0, 0), (1, 2), (2, 1)}
    assert Method("argmax", 0, 0, "shift").links(pair) == {(0, 0), (1, 2), (2, 1)}
    assert Method("argmax", 0, None, "predicts").links(pair) == {(0, 1), (1, 0), (2, 2)}


def test_shift_att_joins_subwords_into_words_by_any_link() -> None:
    rows = np.array([[0.9, 0.1, 0.0], [0.1, 0.1, 0.8], [0.2, 0.7, 0.1]])  # 3 target subwords x 3 source subwords
    assert subword_argmax(rows, [0, 0, 1], [0, 1, 1]) == {(0, 0), (0, 1), (1, 1)}


# --- the bench, end to end on a file written here ---


def test_eflomal_links_english_word_to_spanish_word(toy_corpus: Path) -> None:
    """eflomal samples (seeded from /dev/urandom, no seed option): check the share of pairs it gets right,
    (0.82 to 1.0 over 40 runs), rather than one sentence, which it misses now and then."""
    pytest.importorskip("eflomal")
    lines = toy_corpus.read_text(encoding="utf-8").splitlines()  # "El gato rojo 3.<TAB>The red cat 3."
    corpus = [(tokenize(en), tokenize(es)) for es, en in (line.split("\t") for line in lines)]
    links = eflomal_links(corpus)
    assert len(links) == len(corpus)
    # (English, Spanish): red-rojo, cat-gato, 3-3
    right = sum({(1, 2), (2, 1), (3, 3)} <= pair_links for pair_links in links)
    assert right >= 0.7 * len(corpus)  # 0.82–1.0 over 40 runs; a diagonal aligner gets 0


def test_without_eflomal_installed_its_row_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "eflomal", None)  # import eflomal now raises ImportError
    assert eflomal_links([(["a"], ["b"])]) is None


def test_bench_writes_one_record_per_method(tmp_path: Path, toy_corpus: Path) -> None:
    from workshop.bench.alignment import main

    gold = tmp_path / "gold.tsv"
    gold.write_text(
        "The black cat is sleeping .\tEl gato negro está durmiendo .\t0-0 1-2 2-1 3-3 4-4 5-5\n"
        "I want to eat an apple .\tQuiero comer una manzana .\t0-0 1-0 3-1 4-2 5-3 6-4\n",
        encoding="utf-8",
    )
    out = tmp_path / "alignment.json"
    args = ["--model", str(SHIPPED), "--gold", str(gold), "--dev", str(gold), "--corpus", str(toy_corpus)]
    assert main([*args, "--json", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))
    assert all({"method", "precision", "recall", "aer"} <= set(r) for r in records)
    names = [r["method"] for r in records]
    assert len(names) == len(set(names))
    assert names[0].startswith("diagonal") and any(n.startswith("Shift-Att") for n in names)
    assert any(n.startswith("eflomal") for n in names) == (importlib.util.find_spec("eflomal") is not None)
    chosen = [r for r in records if r.get("chosen_on_dev")]
    assert {r["extraction"] for r in chosen} == {
        "argmax",
        "threshold",
        "intersection",
        "grow-diag-final-and",
        "Shift-Att",
    }
    assert all(0.0 <= r["aer"] <= 1.0 and r["aer"] == pytest.approx(r["dev_aer"]) for r in chosen)


def test_bench_scores_the_head_guided_alignment_taught(tmp_path: Path) -> None:
    """A model trained with optim.guided_alignment gets a row for its taught head ("predicts" rows, argmax), equal
    to that head's cell of the grid. (The shipped weights stand in for such a model: only the row is checked.)"""
    from lab.alignment.methods import Method
    from workshop.bench.alignment import guided_head, main

    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "model.safetensors", "spm.model"):
        (model / name).symlink_to(SHIPPED / name)
    saved = json.loads((SHIPPED / "train_config.json").read_text(encoding="utf-8"))
    n_layers = json.loads((SHIPPED / "config.json").read_text(encoding="utf-8"))["n_decoder_layers"]
    saved["optim"].pop("guided_alignment", None)  # trained without it
    (model / "train_config.json").write_text(json.dumps(saved), encoding="utf-8")
    assert guided_head(model, n_layers) is None
    saved["optim"]["guided_alignment"] = {"weight": 0.05, "layer": -2, "head": 0}
    (model / "train_config.json").write_text(json.dumps(saved), encoding="utf-8")
    assert guided_head(model, n_layers) == Method("argmax", n_layers - 2, 0, "predicts")
    gold = tmp_path / "gold.tsv"
    gold.write_text("The black cat is sleeping .\tEl gato negro está durmiendo .\t0-0 1-2 2-1 3-3 4-4 5-5\n")
    out = tmp_path / "alignment.json"
    assert main(["--model", str(model), "--gold", str(gold), "--no-eflomal", "--json", str(out)]) == 0
    records = json.loads(out.read_text(encoding="utf-8"))
    (taught,) = [r for r in records if r.get("guided_alignment")]
    name = f"layer {n_layers - 1}, head 1, predicts: argmax"  # layer -2, 1-based
    assert taught["method"] == f"guided alignment's head: {name}"
    (cell,) = [r for r in records if r["method"] == name]
    assert (taught["precision"], taught["recall"], taught["aer"]) == (cell["precision"], cell["recall"], cell["aer"])
