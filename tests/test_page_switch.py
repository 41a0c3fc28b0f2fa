"""Every run is usable and nothing is lost on a page switch: a stopped run is scored from its best checkpoint and
picked on the Translate page; the Train page's settings, its upload and the Translate page's model pick survive a
round trip between the two pages (AppTest, through app.py's navigation)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from streamlit.testing.v1 import AppTest

from jobs import control
from jobs.run_verdict import checkpoint_step, stopped_scores
from lab.page.model_choices import find_models, stopped_label
from model.run_dir import BEST_DIR, RESULT_FILE, WEIGHTS_FILE
from translate.model_dir import weights_dir
from translate.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
TRAIN = "pages/1_Train.py"


def stopped_copy(finished: Path, run_dir: Path) -> Path:
    """``finished`` as the page leaves a run stopped before its end: checkpoints, best/, no final model or scores."""
    shutil.copytree(finished, run_dir)
    for name in (WEIGHTS_FILE, RESULT_FILE):
        (run_dir / name).unlink()
    events = [{"event": "start", "pid": 1}, {"event": "stop", "pid": 1}]
    (run_dir / control.EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in events))
    return run_dir


def app(tab: str = "tab-1") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state["owner_token"] = tab
    at.run()
    assert not at.exception
    # AppTest names no function page, and lists only the current page's registry: keep the Translate page's id.
    at.translate_page = next(h for h, page in at._registered_pages.items() if page["page_name"] == "Translate")
    return at


def to_train(at: AppTest) -> AppTest:
    at.switch_page(TRAIN).run()
    assert not at.exception
    return at


def to_translate(at: AppTest) -> AppTest:
    """Back to the Translate page: a page of a function, which ``switch_page`` cannot name by file."""
    at._page_hash = at.translate_page
    at.run()
    assert not at.exception
    return at


def test_a_stopped_run_loads_its_best_checkpoint(model_env: Path, tmp_path: Path) -> None:
    run_dir = stopped_copy(model_env, tmp_path / "runs" / "halted")
    assert weights_dir(run_dir) == run_dir / BEST_DIR
    loaded = Translator.load(run_dir).model.state_dict()
    best = load_file(str(run_dir / BEST_DIR / WEIGHTS_FILE))
    assert all(torch.equal(loaded[name], tensor) for name, tensor in best.items())
    stopped = [c for c in find_models(model_env, run_dir.parent) if c.stopped_at is not None]
    assert [c.label for c in stopped] == [stopped_label("halted", 300)]
    assert not [c for c in find_models(model_env, run_dir.parent, {"halted"}) if c.stopped_at]  # training now


def test_a_stopped_run_is_scored_and_picked_on_the_translate_page(model_env: Path, tmp_path: Path) -> None:
    run_dir = stopped_copy(model_env, tmp_path / "runs" / "halted")
    at = to_train(app())
    assert at.selectbox(key="watch_run").value == "halted"
    label = stopped_label("halted", 300)
    assert any("Stopped at step 300" in i.value and label in i.value for i in at.info)
    assert any(b.key == "resume" and b.label == "Resume training" for b in at.button)
    at.button(key="score_stopped").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    best = checkpoint_step(run_dir, [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()])
    scores = stopped_scores(run_dir)
    assert scores is not None and 0 <= scores["bleu"] <= 100
    assert any(m.label == f"Test BLEU (greedy, step {best:,})" for m in at.metric)
    assert any(b.key == "make_default" for b in at.button)  # its own direction: the gate is offered
    at = to_translate(at)
    options = at.selectbox(key="model").options
    assert [c for c in options if "stopped at step" in c] == [label]
    at.selectbox(key="model").select_index(options.index(label)).run()
    at.button(key="translate").click().run()
    assert not at.exception and not at.error


def test_the_train_settings_upload_and_model_pick_survive_a_round_trip(model_env: Path, tmp_path: Path) -> None:
    shutil.copytree(model_env, tmp_path / "runs" / "other")  # a second model to pick
    at = app()
    options = at.selectbox(key="model").options
    at.selectbox(key="model").select_index(options.index("run: other")).run()
    at = to_train(at)
    corpus = "".join(f"El perro {i} corre.\tThe dog {i} runs.\n" for i in range(60))
    at.file_uploader(key="upload").upload("mine.tsv", corpus.encode())
    at.run()
    at.selectbox(key="preset").set_value("small").run()
    at.number_input(key="budget_minutes").set_value(3.0).run()
    at.number_input(key="patience_small").set_value(4).run()
    at.text_input(key="run_name").set_value("kept-name").run()
    assert not at.exception
    at = to_train(to_translate(at))
    assert at.selectbox(key="preset").value == "small" and at.number_input(key="budget_minutes").value == 3.0
    assert at.number_input(key="patience_small").value == 4 and at.text_input(key="run_name").value == "kept-name"
    assert any("Using mine.tsv, uploaded before" in c.value for c in at.caption)
    assert next(m.value for m in at.metric if m.label == "Pairs kept") == "60"
    assert not at.button(key="start").disabled
    at = to_translate(at)
    assert at.selectbox(key="model").value.label == "run: other"


def test_the_start_from_pick_and_the_language_picks_survive_a_round_trip(model_env: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(model_env, runs / "parent")  # a finished model to start from
    at = to_train(app())
    corpus = "".join(f"El perro {i} corre.\tThe dog {i} runs.\n" for i in range(60))
    at.file_uploader(key="upload").upload("mine.tsv", corpus.encode())
    at.run()
    at.selectbox(key="source_lang").set_value("other").run()
    at.text_input(key="source_lang_code").set_value("ast").run()
    at.selectbox(key="target_lang").set_value("fr").run()
    assert "run: parent" not in at.selectbox(key="init_from").options  # Spanish → English: not this direction
    at.selectbox(key="target_lang").set_value("en").run()
    at.text_input(key="source_lang_code").set_value("es").run()
    options = at.selectbox(key="init_from").options
    at.selectbox(key="init_from").set_value(options.index("run: parent")).run()
    at.number_input(key="finetune_lr").set_value(5e-5).run()
    assert not at.exception
    at = to_translate(at)
    shutil.copytree(model_env, runs / "another")  # listed before "parent" now: the pick is kept by its name
    at = to_train(at)
    chooser = at.selectbox(key="init_from")
    assert chooser.options[chooser.value] == "run: parent"
    assert at.number_input(key="finetune_lr").value == pytest.approx(5e-5)
    assert at.selectbox(key="source_lang").value == "other" and at.text_input(key="source_lang_code").value == "es"
    assert at.selectbox(key="target_lang").value == "en"
    at.text_input(key="source_lang_code").set_value("eu").run()  # changed after a restore: kept again
    at.selectbox(key="init_from").set_value(0).run()
    at = to_train(to_translate(at))
    assert at.text_input(key="source_lang_code").value == "eu" and at.selectbox(key="init_from").value == 0


@pytest.mark.parametrize("staged", [3, 10])
def test_the_staged_uploads_are_bounded(tmp_path: Path, staged: int) -> None:
    from jobs.uploads import MAX_STAGED, stage_files

    folders = [stage_files({"c.tsv": f"{i}\n".encode()}, tmp_path) for i in range(staged)]
    left = sorted(p for p in tmp_path.iterdir())
    assert len(left) == min(staged, MAX_STAGED) and folders[-1] in left


def test_a_first_model_of_another_direction_becomes_its_default_against_copying_the_source(
    model_env: Path, tmp_path: Path
) -> None:
    from lab.page.model_choices import recorded_default

    run_dir = tmp_path / "runs" / "reverse"
    shutil.copytree(model_env, run_dir)
    config = json.loads((run_dir / "train_config.json").read_text())
    config["data"] |= {
        "src_lang": "en",
        "tgt_lang": "fr",
        "reverse": False,
    }  # toy pairs, labelled a pair with no canaries
    (run_dir / "train_config.json").write_text(json.dumps(config))
    at = to_train(app())
    button = next(b for b in at.button if b.key == "make_default")
    assert "there is no English → French default yet" in button.help
    button.click().run()
    assert not at.exception and not at.error
    checks = next(t.value for t in at.dataframe if "copy the source" in t.value.columns)
    assert list(checks["check"]) == ["dev BLEU", "dev outputs that loop"]  # the lab has no English → French canaries
    assert (float(checks["this run"][0]) >= float(checks["copy the source"][0]) + 1) and checks["passed"].all()
    assert any("is now the default English → French model" in s.value for s in at.success)
    assert recorded_default(tmp_path / "runs") == run_dir
    fresh = app("tab-2")  # a new visitor: the Translate page opens with it
    assert fresh.selectbox(key="model").value.label == "run: reverse"
    assert any("English → French" in t.value for t in fresh.title)
