"""Teach a correction (lab/teaching): the copy learns the taught pair; the shared model and its files stay as they were."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from lab.page.direction import languages
from lab.page.examples import examples_for
from lab.teaching.outcome import MAX_STEPS, REPLAY_SIZE, CorrectionError, check_sources, replay_set, teach
from model.run_dir import WEIGHTS_FILE
from translate.translator import Translator

SOURCE = "El gato rojo 3."


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> Translator:
    return Translator.load(tiny_model_dir)


def test_a_taught_correction_is_produced_and_the_original_stays_bit_identical(
    tiny: Translator, tiny_model_dir: Path
) -> None:
    weights = tiny_model_dir / WEIGHTS_FILE
    file_before = sha256(weights)
    state_before = {k: v.clone() for k, v in tiny.model.state_dict().items()}
    original = tiny.translate(SOURCE).text
    correction = "The blue dog 3." if original != "The blue dog 3." else "The green car 3."
    langs = languages(tiny_model_dir)
    outcome = teach(tiny, tiny_model_dir, langs, SOURCE, correction)
    assert outcome.produced and outcome.after == correction and outcome.before == original
    assert 1 <= outcome.steps <= MAX_STEPS
    state_after = tiny.model.state_dict()
    assert state_after.keys() == state_before.keys()
    assert all(torch.equal(state_before[k], state_after[k]) for k in state_before)  # bit-identical
    assert all(p.grad is None for p in tiny.model.parameters())  # the optimizer never saw the shared model
    assert sha256(weights) == file_before
    assert tiny.translate(SOURCE).text == original
    assert [c.source for c in outcome.checks] == list(check_sources(tiny_model_dir, langs))
    assert all(c.before == tiny.translate(c.source).text for c in outcome.checks)


def test_the_replay_set_is_a_fixed_sample_of_the_runs_training_pairs(tiny: Translator, tiny_model_dir: Path) -> None:
    langs = languages(tiny_model_dir)
    first, again = replay_set(tiny, tiny_model_dir, langs), replay_set(tiny, tiny_model_dir, langs)
    assert first == again and len(first.pairs) == REPLAY_SIZE and not first.guards_checks
    assert "splits/train.tsv" in first.origin


def test_without_training_pairs_the_guided_examples_are_replayed_with_the_models_own_translations(
    tiny: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    langs = languages(tiny_model_dir)
    replay = replay_set(tiny, tmp_path, langs)  # a folder with no splits/
    assert replay.guards_checks and [p.src for p in replay.pairs] == list(check_sources(tmp_path, langs))
    assert all(p.tgt == tiny.translate(p.src).text for p in replay.pairs)


def test_the_page_counts_the_guided_examples_replayed_without_the_one_taught(
    tiny: Translator, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Teaching one of the guided examples on a folder without training pairs replays the others only, and says how
    many: one fewer than the examples (the page said all of them)."""
    langs = languages(tiny_model_dir)
    examples = examples_for(langs)
    outcome = teach(tiny, tmp_path, langs, examples[1].source, "The red cat 3.")
    assert outcome.replay.startswith(f"the {len(examples) - 1} guided examples"), outcome.replay
    assert f"{REPLAY_SIZE} of this run's" in teach(tiny, tiny_model_dir, langs, SOURCE, "The red cat 4.").replay


@pytest.mark.parametrize("correction", ["", "   "])
def test_an_empty_correction_is_refused(tiny: Translator, tiny_model_dir: Path, correction: str) -> None:
    with pytest.raises(CorrectionError, match="Type the right English"):
        teach(tiny, tiny_model_dir, languages(tiny_model_dir), SOURCE, correction)


def test_what_the_model_already_says_is_refused(tiny: Translator, tiny_model_dir: Path) -> None:
    with pytest.raises(CorrectionError, match="already says"):
        teach(tiny, tiny_model_dir, languages(tiny_model_dir), SOURCE, tiny.translate(SOURCE).text)


def test_english_outside_the_vocabulary_is_refused(tiny: Translator, tiny_model_dir: Path) -> None:
    with pytest.raises(CorrectionError, match="no form in the model's vocabulary"):
        teach(tiny, tiny_model_dir, languages(tiny_model_dir), SOURCE, "The red cat 3. 😀")
