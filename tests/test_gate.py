"""The regression gate: a model passes against itself, a broken one fails, models on different dev splits are not
compared, and a shipped model is replaced only through the gate (or ``--force``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from data.corpus import read_pairs_file
from model.run_dir import DATA_REPORT_FILE, SPLITS_DIR
from model.weights import save_model
from training import export
from training.evaluate import loops
from training.phrases import Phrase
from translate.translator import Translator
from workshop import gate
from workshop.everyday import typed_key


def own_phrases(translator: Translator, sources: list[str]) -> list[Phrase]:
    """Phrases whose accepted answer is the model's own translation: a list this model gets all right."""
    return [Phrase(s, (translator.translate(s).text,), i + 1) for i, s in enumerate(sources)]


@pytest.fixture(scope="module")
def lists(tiny_model_dir: Path) -> tuple[Translator, list, list[Phrase]]:
    translator = Translator.load(tiny_model_dir)
    dev = read_pairs_file(tiny_model_dir / SPLITS_DIR / "dev.tsv")
    return translator, dev, own_phrases(translator, ["El gato rojo 3.", "El perro azul 7.", "El libro verde 1."])


def broken(translator: Translator) -> Translator:
    """The same model with its output projection zeroed: every step's scores are equal, nothing is translated."""
    model = type(translator.model)(translator.model.config)
    model.load_state_dict(translator.model.state_dict())
    with torch.no_grad():
        model.output.weight.zero_()
    return Translator(model, translator.tokenizer)


def test_a_model_passes_against_itself(lists: tuple) -> None:
    translator, dev, phrases = lists
    checks = gate.gate(translator, translator, dev, gate.GateLists(phrases, phrases, set()))
    assert all(c.passed for c in checks) and all(c.candidate == c.baseline for c in checks)
    assert [c.name for c in checks][:3] == ["dev BLEU as written", "dev outputs that loop", "dev BLEU typed"]
    assert "PASS" in gate.report(checks) and "wrong:" not in gate.report(checks)
    assert all(c.detail == () for c in checks)


def test_a_broken_model_fails_and_the_report_says_which_checks(lists: tuple) -> None:
    translator, dev, phrases = lists
    checks = gate.gate(broken(translator), translator, dev, gate.GateLists(phrases, phrases, set()))
    failed = {c.name for c in checks if not c.passed}
    assert {"dev BLEU as written", "dev BLEU typed", "canaries right"} <= failed
    text = gate.report(checks)
    assert text.endswith("FAIL")
    (canaries,) = [c for c in checks if c.name == "canaries right"]
    said = broken(translator).translate_many([p.source for p in phrases])
    expected = [f'"{p.source}" → "{t}" (baseline: "{p.accepted[0]}")' for p, t in zip(phrases, said, strict=True)]
    assert canaries.detail == tuple(expected)
    assert "canaries right, wrong:" in text and all(line in text for line in canaries.detail)


def test_a_canary_the_shipped_model_misses_too_refuses_no_candidate_but_one_it_loses_does(lists: tuple) -> None:
    translator, dev, phrases = lists
    canaries = [*phrases, Phrase("El gato rojo 3.", ("an answer neither model gives",), 4)]
    checks = gate.gate(translator, translator, dev, gate.GateLists(phrases, canaries, set()))
    (known,) = [c for c in checks if c.name == "canaries right"]
    assert known.passed and (known.candidate, known.baseline) == (3, 3) and known.rule == "all the baseline gets right"
    checks = gate.gate(broken(translator), translator, dev, gate.GateLists(phrases, canaries, set()))
    assert not next(c for c in checks if c.name == "canaries right").passed
    checks = gate.gate(translator, gate.SourceCopy(), dev, gate.GateLists(phrases, canaries, set()))
    assert not next(c for c in checks if c.name == "canaries right").passed  # the copy floor: every canary counts


def test_phrases_seen_in_training_are_told_apart(lists: tuple) -> None:
    translator, dev, phrases = lists
    checks = gate.gate(translator, translator, dev, gate.GateLists(phrases, phrases, {typed_key(phrases[0].source)}))
    (new,) = [c for c in checks if c.name.startswith("everyday phrases not in its training")]
    assert "(2)" in new.name and new.candidate == new.baseline == 2


def test_a_phrase_both_everyday_checks_miss_is_named_once_and_marked_when_new(lists: tuple) -> None:
    translator, dev, phrases = lists
    seen = {typed_key(phrases[0].source)}
    checks = gate.gate(broken(translator), translator, dev, gate.GateLists(phrases, phrases, seen))
    overall, new = (c for c in checks if c.name.startswith("everyday phrases"))
    assert not overall.passed and not new.passed  # every phrase wrong: both checks fail
    assert len(overall.detail) == len(phrases) and new.detail == ()  # the unseen ones are in the overall list
    marked = [line.endswith(gate.NOT_IN_TRAINING) for line in overall.detail]
    assert marked == [False] + [True] * (len(phrases) - 1)
    alone = gate.gate(broken(translator), translator, dev, gate.GateLists(phrases, phrases, None))
    assert not any(gate.NOT_IN_TRAINING in line for c in alone for line in c.detail)  # unknown training: no marks


def test_loops_are_counted_by_repeated_words() -> None:
    assert loops(["I am am am am here.", "I am here.", "No, no, no, no!", "a b a b"]) == 2


def test_models_on_different_dev_splits_are_not_compared(tiny_model_dir: Path, tmp_path: Path) -> None:
    candidate = tmp_path / "candidate"
    shutil.copytree(tiny_model_dir, candidate)
    assert gate.dev_pairs(candidate, tiny_model_dir) == read_pairs_file(tiny_model_dir / SPLITS_DIR / "dev.tsv")
    dev = candidate / SPLITS_DIR / "dev.tsv"
    dev.write_text("".join(dev.read_text().splitlines(keepends=True)[1:]))  # one pair fewer
    with pytest.raises(gate.GateError, match="sha256 differs"):
        gate.dev_pairs(candidate, tiny_model_dir)
    with pytest.raises(gate.GateError, match="is the baseline itself"):
        gate.run_gate(tiny_model_dir, tiny_model_dir)


def test_a_shipped_model_is_replaced_only_through_the_gate(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    checkpoints = tmp_path / "checkpoints"
    shipped = export.export(tiny_model_dir, checkpoints / "es-en", torch.float32)  # a model folder, as shipped
    run = tmp_path / "run"
    shutil.copytree(tiny_model_dir, run)
    save_model(broken(Translator.load(run)).model, run)  # a run that translates nothing
    monkeypatch.setattr(export, "CHECKPOINTS", checkpoints)  # the gate itself runs in its own process
    before = (shipped / "model.safetensors").read_bytes()
    assert export.main(["--run", str(run), "--out", str(shipped)]) == 2
    err = capsys.readouterr().err
    assert "fails the regression gate (dev BLEU as written" in err and "--force" in err
    assert (shipped / "model.safetensors").read_bytes() == before
    assert export.main(["--run", str(run), "--out", str(shipped), "--force"]) == 0
    assert (shipped / "model.safetensors").read_bytes() != before
    assert json.loads((shipped / DATA_REPORT_FILE).read_text())["sha256"]["dev"]  # a model folder as before


def test_export_says_why_the_gate_could_not_run(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    checkpoints = tmp_path / "checkpoints"
    shipped = export.export(tiny_model_dir, checkpoints / "es-en", torch.float32)
    run = Path(shutil.copytree(tiny_model_dir, tmp_path / "run"))
    dev = run / SPLITS_DIR / "dev.tsv"
    dev.write_text("".join(dev.read_text().splitlines(keepends=True)[1:]))  # another dev split: not comparable
    monkeypatch.setattr(export, "CHECKPOINTS", checkpoints)
    assert export.main(["--run", str(run), "--out", str(shipped)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the regression gate could not run (") and "sha256 differs" in err
    assert "--force" in err and err.count("\n") == 1


def test_a_first_model_of_its_direction_is_judged_against_copying_the_source(lists: tuple) -> None:
    translator, dev, phrases = lists
    floor = gate.SourceCopy()
    assert floor.translate_many([p.src for p in dev[:3]]) == [p.src for p in dev[:3]]
    copy = [gate.CopyItem(p.src, p.tgt, ()) for p in dev[:3]]
    checks = gate.gate(translator, floor, dev, gate.GateLists(phrases, phrases, set(), copy))
    (written,) = [c for c in checks if c.name == "dev BLEU as written"]
    assert written.baseline == gate.score(floor, dev)["bleu"]
    assert not [c for c in checks if "names" in c.name]  # copying keeps every name: no baseline for that check


def test_the_gate_reads_the_lists_of_the_candidate_direction(tiny_model_dir: Path) -> None:
    everyday, canaries = gate.direction_lists(tiny_model_dir)
    assert (everyday.name, canaries.name) == ("everyday-es-en.tsv", "canaries-es-en.tsv")


def test_names_lost_count_against_the_candidate_beyond_the_slack_only(lists: tuple) -> None:
    translator, _, _ = lists
    sources = ["El gato rojo 3.", "El perro azul 7.", "El libro verde 1."]
    # each item must hold a word of the model's own output: the model keeps all three, the broken one none
    said = translator.translate_many(sources, gate.DecodeOptions(name_guard=False))
    items = [gate.CopyItem(s, t, (t.split()[0],)) for s, t in zip(sources, said, strict=True) if t.split()]
    assert len(items) == 3
    pair = (broken(translator), translator)
    for slack, passes in ((0, False), (2, False), (3, True)):
        checks = gate.copy_checks(pair, items, slack)
        written = [c for c in checks if "written, the model alone" in c.name]
        assert [(c.candidate, c.baseline, c.passed) for c in written] == [(0, 3, passes)]
        assert written[0].rule == f">= baseline - {slack}"


def test_everyday_phrases_lost_count_against_the_candidate_beyond_the_slack_only(lists: tuple) -> None:
    translator, _, phrases = lists
    pair = (broken(translator), translator)  # the broken model gets none of them right, the model all
    for listed, slack, passes in ((1, 0, False), (1, 1, True), (2, 1, False)):
        overall = gate.phrase_checks(pair, gate.GateLists(phrases[:listed], phrases, None), slack)[0]
        assert (overall.name, overall.candidate, overall.baseline) == ("everyday phrases right", 0, listed)
        assert overall.passed == passes and overall.rule == (f">= baseline - {slack}" if slack else ">= baseline")
