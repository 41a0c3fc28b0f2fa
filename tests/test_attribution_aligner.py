"""Alignment from attribution (issue 26, item 4): the rows are the What-if tool's attributions, every output step at
once; the links join existing words only; the bench prints the attribution rows beside the attention ones. Gold files
are written here (toy sentences): the real gold data is never copied into the repository."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.alignment.bench_result import load_alignment
from lab.alignment.methods import Method
from lab.alignment.scoring import GoldPair, read_gold
from lab.whatif.attribution import attribute
from translate.translator import Translator
from workshop.bench.alignment import GoldFile, attribution_methods, save_alignment
from workshop.bench.attribution_aligner import AttributionMethod, attribute_gold, source_rows

GOLD = (  # English, Spanish, links (English index - Spanish index), as XL-WA writes them
    "The red cat 3 .\tEl gato rojo 3 .\t0-0 1-2 2-1 3-3 4-4\n"
    "The green book 7 .\tEl libro verde 7 .\t0-0 1-2 2-1 3-3 4-4\n"
)


@pytest.fixture(scope="module")
def translator(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.tsv"
    path.write_text(GOLD, encoding="utf-8")
    return path


def test_every_rows_source_attribution_equals_the_what_if_tools_for_that_step(translator: Translator) -> None:
    src, out = translator.tokenizer.encode_src("El gato rojo 3."), [5, 9, 7, 3]
    rows = source_rows(translator.model, src, out, steps=3)
    assert rows.grad_x_input.shape == rows.grad_x_input_norm.shape == (len(out), len(src))
    assert rows.integrated is not None and rows.integrated.shape == (len(out), len(src))
    for step in range(len(out)):
        one = attribute(translator.model, src, out, step, steps=3)
        np.testing.assert_allclose(rows.grad_x_input[step], one.src_grad_x_input, atol=1e-5)
        np.testing.assert_allclose(rows.integrated[step], one.src_integrated, atol=1e-5)
    assert (rows.grad_x_input_norm >= np.abs(rows.grad_x_input) / np.sqrt(translator.model.config.d_model)).all()


def test_rows_are_non_negative_shares_and_the_same_on_every_run(translator: Translator, gold: Path) -> None:
    pair = read_gold(gold)[0]
    first, again = attribute_gold(translator, pair, steps=2), attribute_gold(translator, pair, steps=2)
    assert set(first.words) == set(again.words) and len(first.words) == 3 * 2  # three kinds, two readings
    for key, weights in first.words.items():
        assert weights.shape == (len(pair.target), len(pair.source))
        assert (weights >= 0).all()
        sums = weights.sum(axis=-1)
        assert np.allclose(sums[sums > 0], 1.0)
        np.testing.assert_array_equal(weights, again.words[key])


def test_links_join_only_words_that_exist(translator: Translator) -> None:
    pair = GoldPair(
        ["The", "big", "blue", "dog", "sleeps", "."], ["El", "perro", "azul", "grande", "duerme", "."], frozenset()
    )
    attributed = attribute_gold(translator, pair, steps=2)
    n_target, n_source = len(pair.target), len(pair.source)
    for group in attribution_methods(2).values():
        for method in group:
            links = method.links(attributed)
            assert all(0 <= i < n_target and 0 <= j < n_source for i, j in links), method.name
    argmax = AttributionMethod("grad_x_input_norm", "predicts", "argmax")
    assert len(argmax.links(attributed)) == n_target  # one link per English word


def test_bench_prints_the_attribution_rows_beside_attention(
    tiny_model_dir: Path, gold: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workshop.bench.alignment import main

    out = tmp_path / "alignment.json"
    args = ["--model", str(tiny_model_dir), "--gold", str(gold), "--dev", str(gold), "--no-eflomal"]
    assert main([*args, "--ig-steps", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| attribution, input × gradient" in printed and "| layer 1, mean of heads" in printed
    records = json.loads(out.read_text(encoding="utf-8"))
    chosen = [r for r in records if r.get("chosen_on_dev") and "attribution" in r]
    assert [r["extraction"] for r in chosen] == ["argmax", "threshold", "intersection", "grow-diag-final-and"]
    for r in chosen:
        method = AttributionMethod.from_fields(r)
        assert method.name == r["method"] and method.fields() == {k: r[k] for k in method.fields()}
        assert r["aer"] == pytest.approx(r["dev_aer"]) and f"| {r['method']} |" in printed
    save_alignment(tmp_path, "toy", records, GoldFile("g", "0" * 64, 2), GoldFile("g", "0" * 64, 2))
    stored = load_alignment(tmp_path)  # the app's best aligner stays the attention's, whatever attribution scores
    assert stored is not None and isinstance(stored.best, Method)


def test_bench_without_attribution_says_so(
    tiny_model_dir: Path, gold: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workshop.bench.alignment import main

    assert main(["--model", str(tiny_model_dir), "--gold", str(gold), "--no-eflomal", "--no-attribution"]) == 0
    printed = capsys.readouterr().out
    assert "Attribution skipped (--no-attribution)." in printed and "| attribution," not in printed
