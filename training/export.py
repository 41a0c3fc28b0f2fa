"""``python -m training.export``: copy a finished run's inference files into a shippable model directory.

Only what inference and the model card need: config, tokenizer, weights (optionally in half precision), the training
config (to regenerate the split), the data report and the final metrics; no corpus text, snapshots or optimizer state.
``--out`` (a model directory, never the run: training/outputs.py) is replaced as a whole once the new one is complete
and loadable, so files that described the previous model (``MODEL_CARD.md``, ``alignment.json``, ``ctranslate2/``)
never end up beside weights they do not describe.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from data.split_record import SPLIT_RECORD_FILE
from model.run_dir import CONFIG_FILE, DATA_REPORT_FILE, NAME_GUARD_FILE, RESULT_FILE, TRAIN_CONFIG_FILE
from model.weights import ModelLoadError, save_model, staged_dir
from training.outputs import OutputError, check_model_dir
from training.prepare import model_data, model_split
from translate import name_guard
from translate.model_dir import load_model
from translate.settings import REPO_ROOT

CHECKPOINTS = REPO_ROOT / "checkpoints"  # shipped models: replacing one goes through the gate
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
EXTRA_FILES = (TRAIN_CONFIG_FILE, DATA_REPORT_FILE, SPLIT_RECORD_FILE, RESULT_FILE, NAME_GUARD_FILE)


class ExportError(ValueError):
    """The regression gate refuses the export, or could not run; the message names the directory."""


def gate_refuses(run_dir: Path, out: Path) -> str:
    """Why ``run_dir`` may not replace the model at ``out`` (a model folder in ``checkpoints/``, which the app and
    the commands use by default): the regression gate's failures against it; "" when it passes or ``out`` is
    elsewhere. The gate is a workshop tool: it runs in its own process (the lab never imports the workshop)."""
    dest = out.resolve()
    if CHECKPOINTS.resolve() not in dest.parents or not (dest / CONFIG_FILE).is_file():
        return ""
    print(f"{out} is a shipped model: the run must pass the regression gate against it (python -m workshop gate)")
    with tempfile.TemporaryDirectory() as tmp:
        verdict = Path(tmp) / "gate.json"
        argv = [sys.executable, "-m", "workshop", "gate", "--candidate", str(run_dir.resolve())]
        argv += ["--baseline", str(dest), "--json", str(verdict)]
        done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        checks = json.loads(verdict.read_text(encoding="utf-8"))["checks"] if verdict.is_file() else None
    if done.returncode not in (0, 1) or checks is None:
        lines = [line.removeprefix("error: ") for line in done.stderr.splitlines() if line.strip()]
        err = lines[-1] if lines else f"exit code {done.returncode}"
        return f"the regression gate could not run ({err}); pass --force to replace {out} anyway"
    print(done.stdout, end="")  # the gate's table of checks
    failed = [c["name"] for c in checks if not c["passed"]]
    if not failed:
        return ""
    return f"{run_dir} fails the regression gate ({', '.join(failed)}); {out} is unchanged (--force replaces it)"


def export(run_dir: Path, out: Path, dtype: torch.dtype) -> Path:
    """Write ``out`` from ``run_dir`` (ModelLoadError without a final model); on any failure it is left as it was."""
    check_model_dir(out, [("the run directory", run_dir)])  # a run, or someone's files, are never replaced
    loaded = load_model(run_dir)
    with staged_dir(out, "export") as tmp:  # beside out: the final rename is atomic
        save_model(loaded.model, tmp, dtype=dtype)
        loaded.tokenizer.save(tmp)
        for name in EXTRA_FILES:
            if (run_dir / name).is_file():
                shutil.copy(run_dir / name, tmp / name)
        load_model(tmp)  # what we ship must load
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    parser.add_argument("--run", "--model", type=Path, required=True, help="finished run (or any model) directory")
    parser.add_argument("--out", type=Path, required=True, help="directory to write, e.g. checkpoints/es-en")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16", help="weight precision on disk")
    parser.add_argument(
        "--force", action="store_true", help=f"replace a model in {CHECKPOINTS} even if the run fails the gate"
    )
    args = parser.parse_args(argv)
    before = {p.name for p in args.out.iterdir()} if args.out.is_dir() else set()
    try:
        check_model_dir(args.out, [("the run directory", args.run)])  # before the gate: it never ends in a refusal
        if not args.force and (refused := gate_refuses(args.run, args.out)):
            raise ExportError(refused)
        export(args.run, args.out, DTYPES[args.dtype])
    except (ModelLoadError, ExportError, OutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: writing {args.out} failed ({err}); {args.out} is unchanged", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file())
    print(f"wrote {args.out} ({size / 1e6:.1f} MB)")
    dropped = sorted(before - {p.name for p in args.out.iterdir()})
    if dropped:
        print(f"removed with the previous model (they described it): {', '.join(dropped)}")
    return 0


def guard_main(argv: list[str] | None = None) -> int:
    """``python -m training guard --model DIR``: write DIR's name_guard.json from its training pairs (a CorpusError
    is the door's one line: training/refusals.py)."""
    parser = argparse.ArgumentParser(prog="python -m training guard", description=guard_main.__doc__)
    parser.add_argument("--model", type=Path, required=True, help="model or run directory")
    args = parser.parse_args(argv)
    data = model_data(args.model)
    guard = name_guard.build(model_split(args.model).train, data.direction[0] if data else "es")
    guard.save(args.model / NAME_GUARD_FILE)
    print(f"{args.model / NAME_GUARD_FILE}: stand-ins {dict(guard.stand_ins)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
