"""``python -m translate``: sentences as arguments or from standard input; bad model directories exit 2."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from translate.cli import main
from translate.translator import Translator

ROOT = Path(__file__).resolve().parent.parent


def translate_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "translate", *args]
    return subprocess.run(
        cmd,
        cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_sentences_as_arguments(tiny_model_dir: Path) -> None:
    sentences = ["El gato rojo 3.", "El perro azul 7."]
    result = translate_cli("--model", str(tiny_model_dir), *sentences)
    assert result.returncode == 0, result.stderr
    translator = Translator.load(tiny_model_dir)
    assert result.stdout.splitlines() == [translator.translate(s).text for s in sentences]


@pytest.mark.slow
def test_standard_input_line_by_line(tiny_model_dir: Path) -> None:
    result = translate_cli(
        "--model", str(tiny_model_dir), "--beam", "3", stdin="El gato rojo 3.\n\nEl libro verde 1.\n"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and lines[0] and lines[1] == "" and lines[2]  # an empty line stays empty


def test_n_best_prints_scores(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", str(tiny_model_dir), "--beam", "4", "--n-best", "2", "El coche negro 5."]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and all(len(row) == 3 for row in rows)
    assert float(rows[0][0]) >= float(rows[1][0])  # best first


def test_characters_left_out_are_named_on_stderr(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", str(tiny_model_dir), "El gato 😀 rojo.", "El gato rojo."]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and err.count("left out") == 1 and "😀" in err


def test_missing_model_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-model"
    assert main(["--model", str(missing), "Hola"]) == 2
    assert f"{missing}: model directory not found" in capsys.readouterr().err


@pytest.mark.parametrize(("broken", "content"), [("config.json", "{not json"), ("model.safetensors", "truncated")])
def test_broken_model_file_is_named(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str, content: str
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "model.safetensors", "spm.model"):
        shutil.copy(tiny_model_dir / name, model / name)
    (model / broken).write_text(content)
    assert main(["--model", str(model), "Hola"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(model / broken) in err


def rewrite_header(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the JSON header of a safetensors file in place, keeping its tensor bytes."""
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + size])
    change({k: v for k, v in header.items() if k != "__metadata__"})
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data[8 + size :])


def weights_lie(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """A lie told by the safetensors header: ``change`` edits the header's tensor entries."""
    return lambda model: rewrite_header(model / "model.safetensors", change)


def longer_first_tensor(header: dict[str, Any]) -> None:
    header[sorted(header)[0]]["shape"].insert(0, 3)


def integer_tensors(header: dict[str, Any]) -> None:
    for tensor in header.values():
        tensor["dtype"] = "I32"


def offsets_past_the_end(header: dict[str, Any]) -> None:
    header[sorted(header)[0]]["data_offsets"][1] = 10**9


def huge_header_size(model: Path) -> None:
    path = model / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 10**12) + path.read_bytes()[8:])


def tokenizer_bytes(data: bytes) -> Callable[[Path], None]:
    return lambda model: (model / "spm.model").write_bytes(data)


def config_change(**values: object) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(json.dumps({**config, **values}))

    return change


LIES: dict[str, tuple[str, Callable[[Path], None], str]] = {  # the file named, the lie, what the message says
    "shape": ("model.safetensors", weights_lie(longer_first_tensor), "truncated or corrupted"),
    "dtype": ("model.safetensors", weights_lie(integer_tensors), "holds I32; weights are floating-point"),
    "offsets": ("model.safetensors", weights_lie(offsets_past_the_end), "truncated or corrupted"),
    "header size": ("model.safetensors", huge_header_size, "a safetensors header of .* bytes; expected at most"),
    "empty tokenizer": ("spm.model", tokenizer_bytes(b""), "empty file"),
    "random tokenizer": ("spm.model", tokenizer_bytes(random.Random(0).randbytes(4096)), "not a SentencePiece"),
    "bool": ("config.json", config_change(n_heads=True), "n_heads: expected int, got True"),
    "null": ("config.json", config_change(d_ff=None), "d_ff: expected int"),
    "list": ("config.json", config_change(dropout=[0.1]), "dropout: expected float"),
    "string": ("config.json", config_change(src_vocab_size="200"), "src_vocab_size: expected int"),
    "pad id": ("config.json", config_change(pad_id=10**6), r"model.pad_id must be in \[0, "),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_model_folder_that_lies_gets_one_line(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], lie: str
) -> None:
    file, make, message = LIES[lie]
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "model.safetensors", "spm.model"):
        shutil.copy(tiny_model_dir / name, model / name)
    make(model)
    assert main(["--model", str(model), "Hola"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {model / file}") and re.search(message, err), err


def test_standard_input_is_batched_and_keeps_the_order(
    tiny_model_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sentences = [
        f"El {noun} {colour} {i % 20}."
        for i, (noun, colour) in enumerate(
            (n, c) for n in ("gato", "perro", "libro") for c in ("rojo", "azul", "verde")
        )
    ]
    lines = [*sentences[:4], "", *sentences[4:], "El gato rojo 3. " * 30]  # a blank line and a long one
    batches: list[int] = []
    real = Translator.translate_batch

    def counted(self: Translator, texts: list[str], *args: object) -> list:
        batches.append(len(texts))
        return real(self, texts, *args)

    monkeypatch.setattr(Translator, "translate_batch", counted)
    monkeypatch.setattr("translate.cli.CHUNK_LINES", 4)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("\n".join(lines) + "\n"))
    assert main(["--model", str(tiny_model_dir), "--batch-size", "16"]) == 0
    out = capsys.readouterr().out.splitlines()
    monkeypatch.setattr(Translator, "translate_batch", real)
    translator = Translator.load(tiny_model_dir)
    assert len(out) == len(lines) and out[4] == ""
    for line, text in zip(lines[:-1], out[:-1], strict=True):
        assert text == (translator.translate(line).text if line else "")
    long = translator.pieces(lines[-1])
    assert len(long) == 30 and out[-1] == " ".join(translator.translate(p).text for p in long)
    assert len(batches) < len(lines) and max(batches) > 1  # several lines per batch, not one call per line


@pytest.mark.slow
@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])  # stdin read with surrogates, or strictly
def test_standard_input_that_is_not_utf8_is_one_line(tiny_model_dir: Path, locale: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "translate", "--model", str(tiny_model_dir)],
        cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS="1", LC_ALL=locale, PYTHONIOENCODING=""),
        input=b"El gato rojo 3.\nEl \xff\xfe gato\n",
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.decode().startswith("error: standard input: not UTF-8 text"), done
    assert done.stderr.decode().count("\n") == 1  # was a SentencePiece traceback
