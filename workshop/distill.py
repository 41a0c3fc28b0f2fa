"""Sequence-level knowledge distillation (Kim & Rush 2016): a teacher re-translates every training source, and a
student learns from those translations (``python -m workshop student``).

``python -m workshop distill --teacher DIR [--teacher DIR2 …] --pairs RUN/splits/train.tsv --out FILE`` writes
``source<TAB>teacher's translation`` lines in the order of ``--pairs`` and, beside them, ``FILE.json``: the teacher
(its directories and weights' sha256), the beam, the pairs file's sha256 and the minutes it took. It is resumable:
run it again and it continues after the last line written; an existing file without that side-car is refused.
Several ``--teacher`` directories decode as one ensemble (workshop/ensemble.py); ``--engine ctranslate2`` decodes one
teacher with its CTranslate2 export (workshop/ct2.py, ~3× faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from data.corpus import CorpusError, Pair, read_pairs_file
from data.split_record import file_sha256
from model.bounded_read import read_json
from model.run_dir import WEIGHTS_FILE
from model.weights import ModelLoadError
from training.outputs import OutputError, check_file
from translate.cli import add_decode_arguments, decode_options
from translate.translator import DecodeOptions, Translator
from workshop.ct2 import CT2_DIR, CT2Translator
from workshop.ensemble import load_ensemble

CHUNK = 1024  # sentences translated, then appended and flushed, at a time
ENGINES = ("pytorch", "ctranslate2")


def identity(teachers: list[Path], pairs: Path, options: DecodeOptions, engine: str) -> dict:
    """What a distilled file was made from: a resumed run must continue with exactly the same."""
    return {
        "teachers": [str(t) for t in teachers],
        "teacher_weights_sha256": [file_sha256(t / WEIGHTS_FILE) for t in teachers],
        "engine": engine,
        "beam_size": options.beam_size,
        "length_penalty": options.length_penalty,
        "pairs": str(pairs),
        "pairs_sha256": file_sha256(pairs),
    }


def side_car(path: Path) -> dict:
    """The side-car of a distilled file (``identity`` and progress); CorpusError names a file that is not one."""
    found = read_json(path, CorpusError)
    if not isinstance(found, dict) or "teachers" not in found:
        raise CorpusError(f"{path}: not the side-car of a distilled file (expected a JSON object naming its teachers)")
    return found


def load_teacher(teachers: list[Path], device: str, engine: str, ct2_dir: Path | None) -> Translator:
    """The teacher's Translator: PyTorch (several directories: an ensemble) or one model's CTranslate2 export; a
    missing or stale export raises ModelLoadError naming it."""
    if engine == "pytorch":
        return load_ensemble(teachers, device)
    if len(teachers) > 1:
        raise ModelLoadError("an ensemble decodes with the pytorch engine only (--engine pytorch)")
    return CT2Translator.load(teachers[0], device, ct2_dir)


def distill(translator: Translator, pairs: list[Pair], out: Path, options: DecodeOptions, batch_size: int) -> float:
    """Append the teacher's translation of every pair's source not yet in ``out``; returns the seconds it took."""
    done = len(out.read_text(encoding="utf-8").splitlines()) if out.is_file() else 0
    start = time.perf_counter()
    with (
        open(out, "a", encoding="utf-8") as f,
        tqdm(total=len(pairs), initial=done, desc="distilling", unit="sentence", dynamic_ncols=True) as bar,
    ):
        for first in range(done, len(pairs), CHUNK):
            sources = [p.src for p in pairs[first : first + CHUNK]]
            texts = translator.translate_many(sources, options, batch_size)
            f.write("".join(f"{s}\t{' '.join(t.split())}\n" for s, t in zip(sources, texts, strict=True)))
            f.flush()
            bar.update(len(sources))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop distill", description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", type=Path, action="append", required=True, help="model directory (repeatable)")
    parser.add_argument("--pairs", type=Path, required=True, help="the training pairs (a run's splits/train.tsv)")
    parser.add_argument("--out", type=Path, required=True, help="distilled pairs file to write (or continue)")
    add_decode_arguments(parser, beam=4)  # Kim & Rush: beam search's best
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--engine", choices=ENGINES, default="pytorch", help="ctranslate2: the teacher's export")
    parser.add_argument("--ct2-model", type=Path, help=f"CTranslate2 export (default: TEACHER/{CT2_DIR})")
    args = parser.parse_args(argv)
    options = decode_options(args)
    meta_file = args.out.with_name(args.out.name + ".json")
    try:
        for path in (args.out, meta_file):
            check_file(path, "--out")
        pairs = read_pairs_file(args.pairs)
        made_from = identity(args.teacher, args.pairs, options, args.engine)
        if args.out.is_file() and not meta_file.is_file():
            raise OutputError(
                f"--out {args.out} exists without {meta_file.name} beside it to say which distillation it is; "
                "not appended to: remove it, or choose another --out"
            )
        if meta_file.is_file():  # continued, or written over, only when it says it is this very distillation
            before = {"length_penalty": 1.0, **side_car(meta_file)}  # written before the option: 1.0
            if {k: before.get(k) for k in made_from} != made_from:
                raise CorpusError(
                    f"{args.out}: was begun with another teacher, beam or pairs file ({meta_file}); "
                    "remove it, or choose another --out"
                )
        translator = load_teacher(args.teacher, args.device, args.engine, args.ct2_model)
    except (CorpusError, ModelLoadError, OutputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    previous = side_car(meta_file).get("minutes", 0.0) if args.out.is_file() else 0.0
    meta = {**made_from, "device": str(translator.device), "complete": False, "minutes": previous}
    meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    seconds = distill(translator, pairs, args.out, options, args.batch_size)
    meta = {**meta, "complete": True, "sentences": len(pairs), "minutes": round(previous + seconds / 60, 1)}
    meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(pairs)} pairs, teacher {', '.join(map(str, args.teacher))}, beam {args.beam}")
    return 0
