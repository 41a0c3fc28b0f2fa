"""``python -m training.export``: copy a finished run's inference files into a shippable model directory.

Only what inference and the model card need: config, tokenizer, weights (optionally in half precision),
the training config (to regenerate the split), the data report and the final metrics. No corpus text,
no snapshots, no optimizer state.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch

from model.io import ModelLoadError, load_model, save_model

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
EXTRA_FILES = ("train_config.json", "data_report.json", "metrics.json")


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
    parser.add_argument("--run", type=Path, required=True, help="finished run directory")
    parser.add_argument("--out", type=Path, required=True, help="model directory to write, e.g. checkpoints/es-en")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16", help="weight precision on disk")
    args = parser.parse_args(argv)
    try:
        export(args.run, args.out, DTYPES[args.dtype])
    except ModelLoadError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file())
    print(f"wrote {args.out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
