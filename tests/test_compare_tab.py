"""Two models side by side (lab.attention.translate_with_maps.compare, the Compare two models tab): a model beside itself
differs nowhere; B's maps are B's own record of A's tokens, and B − A is their difference cell by cell; models that
do not read the same tokens with the same heads are said, not drawn; the Train page's button opens the tab on the run."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import translated
from streamlit.testing.v1 import AppTest

from lab.attention.sentence_maps import KINDS
from lab.attention.translate_with_maps import compare, maps_of, why_not_comparable
from model.transformer import Transformer
from translate.translator import Translator
from views.compare_tab import COMPARE_VIEW, MODEL_B

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SENTENCE = "El gato rojo 3."


@pytest.fixture(scope="module")
def a(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def nudged(translator: Translator, seed: int = 0) -> Translator:
    """A copy of ``translator`` whose every weight is moved a little: another model reading the same tokens."""
    other = copy.deepcopy(translator)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(0.2 * p.std().nan_to_num() * torch.randn(p.shape, generator=generator))
    return other


def test_a_model_beside_itself_differs_nowhere(a: Translator) -> None:
    translation = a.translate(SENTENCE)
    maps = maps_of(a, translation.src_ids, translation.best.tokens)
    same = compare(a, a, maps, translation.src_ids, translation.best.tokens)
    assert same.b is not None and same.why_not == ""
    for kind in KINDS:
        for words in (False, True):
            va, vb, change = same.views(kind, words)
            assert np.array_equal(va.weights, vb.weights) and not np.any(change.weights)
    assert all(d == 0 for distances in same.layer_changes().values() for d in distances)


def test_b_reads_a_s_tokens_and_its_maps_are_its_own(a: Translator) -> None:
    b = nudged(a)
    translation = a.translate(SENTENCE)
    src_ids, tokens = translation.src_ids, translation.best.tokens
    maps = maps_of(a, src_ids, tokens)
    pair = compare(a, b, maps, src_ids, tokens)
    own = maps_of(b, src_ids, tokens)  # B's own forced pass over the same tokens
    assert pair.b is not None
    changes = pair.layer_changes()
    for kind in KINDS:
        assert np.array_equal(pair.b.weights(kind), own.weights(kind))
        assert np.array_equal(pair.a.weights(kind), maps_of(a, src_ids, tokens).weights(kind))
        va, vb, change = pair.views(kind, words=False)
        assert np.allclose(change.weights, vb.weights - va.weights) and va.row_labels == vb.row_labels
        assert np.any(change.weights) and all(0 < d <= 1 for d in changes[kind])  # nudged: apart, never past 1


def test_models_that_read_other_tokens_or_heads_are_said_not_drawn(a: Translator) -> None:
    torch.manual_seed(0)
    deeper = Translator(Transformer(dataclasses.replace(a.model.config, n_encoder_layers=2)), a.tokenizer)
    assert "layers" in why_not_comparable(a, deeper)
    translation = a.translate(SENTENCE)
    maps = maps_of(a, translation.src_ids, translation.best.tokens)
    apart = compare(a, deeper, maps, translation.src_ids, translation.best.tokens)
    assert apart.b is None and apart.layer_changes() == {}
    with pytest.raises(ValueError, match="layers"):
        apart.views("cross", False)


def test_the_tab_puts_a_run_beside_the_default(model_env: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(model_env, runs / "copy", ignore=shutil.ignore_patterns("checkpoints", "train_state.pt"))
    at = translated(SENTENCE, COMPARE_VIEW)
    assert at.session_state[MODEL_B] == str(runs / "copy")  # another model of the direction, at first
    table = at.dataframe[-1].value  # the same weights in another folder: no layer apart
    assert list(table.index) == ["Encoder self-attention", "Decoder masked self-attention", "Cross-attention"]
    assert {cell for row in table.to_numpy() for cell in row} <= {"0.000", "–"}
    titles = [json.loads(c.proto.spec).get("title", {}).get("text") for c in at.get("vega_lite_chart")]
    assert titles.count("B − A") == 1


def test_the_train_page_s_button_opens_the_tab_on_the_run(model_env: Path, tmp_path: Path) -> None:
    run = tmp_path / "runs" / "mine"
    shutil.copytree(model_env, run, ignore=shutil.ignore_patterns("checkpoints", "train_state.pt"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/1_Train.py").run()
    at.selectbox(key="watch_run").set_value("mine").run()
    at.button(key="compare_default").click().run()  # the run's result: "Compare with the default"
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["model"].path == model_env and at.session_state["view"] == COMPARE_VIEW
    assert at.session_state[MODEL_B] == str(run) and at.session_state["request"].text  # a sentence, translated
    assert "**B** · run: mine" in [m.value for m in at.markdown]
