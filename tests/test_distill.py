"""Sequence-level distillation: the teacher's file (order, identity, resume) and the student's data (--mix)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from data.corpus import read_pairs_file
from data.readers import ReadReport
from training.prepare import load_and_split
from training.train_config import load_train_config
from translate.translator import DecodeOptions, Translator
from workshop.distill import main
from workshop.student import main as student
from workshop.student import mix_distilled

BEAM = DecodeOptions(beam_size=2)


@pytest.fixture(scope="module")
def distilled(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("distill") / "train.distilled.tsv"
    pairs = tiny_model_dir / "splits" / "train.tsv"
    assert main(["--teacher", str(tiny_model_dir), "--pairs", str(pairs), "--out", str(out), "--beam", "2"]) == 0
    return out


def test_the_teacher_translates_every_source_in_order(tiny_model_dir: Path, distilled: Path) -> None:
    pairs = read_pairs_file(tiny_model_dir / "splits" / "train.tsv")
    rows = read_pairs_file(distilled)
    assert [r.src for r in rows] == [p.src for p in pairs]
    teacher = Translator.load(tiny_model_dir)
    assert [r.tgt for r in rows[:20]] == teacher.translate_many([p.src for p in pairs[:20]], BEAM)
    meta = json.loads(distilled.with_name(distilled.name + ".json").read_text())
    assert meta["complete"] and meta["beam_size"] == 2 and meta["sentences"] == len(pairs)
    assert meta["teachers"] == [str(tiny_model_dir)] and len(meta["teacher_weights_sha256"][0]) == 64


def test_a_stopped_distillation_continues_where_it_stopped(
    tiny_model_dir: Path, distilled: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "part.tsv"
    lines = distilled.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:50]), encoding="utf-8")
    shutil.copy(distilled.with_name(distilled.name + ".json"), out.with_name(out.name + ".json"))
    args = ["--teacher", str(tiny_model_dir), "--pairs", str(tiny_model_dir / "splits" / "train.tsv")]
    assert main([*args, "--out", str(out), "--beam", "2"]) == 0
    assert out.read_text(encoding="utf-8") == distilled.read_text(encoding="utf-8")
    assert main([*args, "--out", str(out), "--beam", "3"]) == 2  # another teacher setting: never mixed in one file
    assert "begun with another teacher, beam or pairs file" in capsys.readouterr().err


@pytest.mark.parametrize("mix", ["original", "distilled", "both"])
def test_the_student_trains_on_what_mix_says(tiny_model_dir: Path, distilled: Path, mix: str) -> None:
    config = json.loads((tiny_model_dir / "train_config.json").read_text())
    base = load_train_config(Path("configs/tiny.toml"), [f"data.corpora={config['data']['corpora']!r}"]).data
    plain = load_and_split(base, ReadReport())
    teacher = {r.src: r.tgt for r in read_pairs_file(distilled)}
    parts = mix_distilled(load_and_split(base, ReadReport()), ReadReport(), teacher, mix)
    pairs = {(p.src, p.tgt) for p in parts.train}
    originals = {(p.src, p.tgt) for p in plain.train}
    held = {p.tgt.rstrip(".").lower() for p in plain.dev + plain.test}  # a teacher's dev sentence keeps the original
    taught = {(p.src, p.tgt if teacher[p.src].rstrip(".").lower() in held else teacher[p.src]) for p in plain.train}
    assert parts.dev == plain.dev and parts.test == plain.test
    assert pairs == {"original": originals, "distilled": taught, "both": originals | taught}[mix]


def test_a_distilled_pair_never_holds_a_dev_sentence(
    tiny_model_dir: Path, distilled: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    config = json.loads((tiny_model_dir / "train_config.json").read_text())
    base = load_train_config(Path("configs/tiny.toml"), [f"data.corpora={config['data']['corpora']!r}"]).data
    parts = load_and_split(base, ReadReport())
    teacher = {r.src: r.tgt for r in read_pairs_file(distilled)}
    teacher[parts.train[0].src] = parts.dev[0].tgt  # the teacher "translated" into a dev sentence
    report = ReadReport()
    mixed = mix_distilled(parts, report, teacher, "distilled")
    assert parts.dev[0].tgt not in {p.tgt for p in mixed.train} and parts.train[0] in mixed.train
    assert report.skipped["distilled translation is a dev or test sentence (original kept)"] >= 1
    out, missing = tmp_path / "run", str(tmp_path / "missing.tsv")
    assert student(["--distilled", missing, "--config", "configs/tiny.toml", "--out", str(out)]) == 2
    assert f"error: --distilled {missing}: " in capsys.readouterr().err and not out.exists()
