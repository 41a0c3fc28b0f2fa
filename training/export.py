"""``python -m training.export``: copy a finished run's inference files into a shippable model directory.

Only what inference and the model card need: config, tokenizer, weights (optionally in half precision),
the training config (to regenerate the split), the data report and the final metrics. No corpus text,
no snapshots, no optimizer state. With ``--format ctranslate2``: write the CTranslate2 form of any model
directory (model/ct2.py), by default into its ``ctranslate2/`` folder, where ``--engine ctranslate2`` looks.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch

from model import ct2
from model.io import ModelLoadError, load_model, save_model
from model.run_dir import DATA_REPORT_FILE, RESULT_FILE, TRAIN_CONFIG_FILE

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
EXTRA_FILES = (TRAIN_CONFIG_FILE, DATA_REPORT_FILE, RESULT_FILE)


def export(run_dir: Path, out: Path, dtype: torch.dtype) -> Path:
    """Write ``out`` from ``run_dir``; returns ``out``. Fails (ModelLoadError) if the run has no final model."""
    loaded = load_model(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_model(loaded.model, out, dtype=dtype)
    loaded.tokenizer.save(out)
    for name in EXTRA_FILES:
        if (run_dir / name).is_file():
            shutil.copy(run_dir / name, out / name)
    load_model(out)  # what we ship must load
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    parser.add_argument("--run", "--model", type=Path, required=True, help="finished run (or any model) directory")
    parser.add_argument(
        "--out", type=Path, help="directory to write, e.g. checkpoints/es-en (ctranslate2 default: RUN/ctranslate2)"
    )
    parser.add_argument("--format", choices=("model", "ctranslate2"), default="model", help="what to write")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16", help="weight precision on disk")
    parser.add_argument("--quantization", choices=ct2.QUANTIZATIONS, default="float32", help="ctranslate2 weights")
    args = parser.parse_args(argv)
    if args.format == "model" and args.out is None:
        parser.error("--out is required with --format model")
    try:
        if args.format == "ctranslate2":
            args.out = ct2.export(args.run, args.out, args.quantization)
        else:
            export(args.run, args.out, DTYPES[args.dtype])
    except (ModelLoadError, ct2.ExportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file())
    print(f"wrote {args.out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
