"""``python -m workshop COMMAND ...``: the workshop's one door, to the tools that made and measure the shipped model."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

# command: (module, what it does); a module's main(argv) receives the rest of the command line.
COMMANDS = {
    "gate": ("workshop.gate", "may a model replace the shipped one? the regression gate"),
    "phrases": ("workshop.everyday", "the everyday phrase list, scored by exact match"),
    "copy-check": ("workshop.copy_check", "does a model carry names, places and numbers it never saw?"),
    "behaviour": ("workshop.checklist", "behaviour tests: names, numbers, pronouns, typing, negation, plurals"),
    "distill": ("workshop.distill", "a teacher re-translates every training source (sequence-level distillation)"),
    "ct2-export": ("workshop.ct2", "a model's CTranslate2 export, for the fast engine of distill and the benches"),
    "student": ("workshop.student", "a training run that also learns from a teacher's translations (distillation)"),
    "average": ("workshop.average", "one model whose weights are the mean of several models' weights"),
    "deepen": ("workshop.deepen", "a model grown deeper without training, computing what its parent computes"),
    "recipe": ("workshop.recipe", "a model's whole recipe, from the corpus, as named steps run in order"),
    "learning-curve": ("workshop.learning_curve", "dev BLEU by corpus size and steps: the Train page's forecast table"),
    "neighbours-index": ("workshop.neighbours_index", "the neighbours view's index of a model's pairs, checked"),
}
BENCH_DIR = Path(__file__).resolve().parent / "bench"
# bench: what it measures; NAME.py is workshop.bench.NAME (its main(argv)), NAME.sh a shell script run with bash.
BENCHES = {
    "alignment": "cross-attention alignments against human ones (XL-WA gold), beside eflomal",
    "app_latency": "how fast the lab answers: translate and maps in Python, a click to the charts in a browser",
    "engine_threads": "CTranslate2's thread settings beside PyTorch's",
    "model_speed": "training steps, the decoding cache, latency and the engines, side by side",
    "quality": "translation quality beside Apertium, on the same held-out sentences",
    "requests": "every request the Translate page can make, at its worst allowed input; --sessions N at once",
    "screenshots": "screenshots of every view of the lab",
    "train_speed": "training-pipeline throughput on the real corpus",
    "uncertainty": 'how well the page\'s "unsure" warning finds wrong translations',
    "word_click": "a click on a word of the translation to its alternatives, in a browser, beside the computation",
    "word_confidence": "how often the words of each shade of the page's word confidence are wrong, on dev",
    "gpu_candidates": "(bash, on a GPU) several recipes side by side; the best ones exported",
    "gpu_teacher": "(bash, on a GPU) the distilled recipe's wider teacher, and its translations",
    "gpu_en_es": "(bash, on a GPU) the en-es recipe's first step at 4× the batch: its everyday figures and weights",
}


def usage() -> str:
    """The commands and the benches, one line each."""
    width = max(map(len, [*COMMANDS, *BENCHES])) + 2
    lines = ["usage: python -m workshop COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<{width}}{about}" for name, (_, about) in COMMANDS.items()]
    lines += ["", "benches (python -m workshop bench NAME [ARGS...]):"]
    lines += [f"  {name:<{width}}{about}" for name, about in BENCHES.items()]
    return "\n".join([*lines, "", "Run python -m workshop COMMAND --help for the options of a command."])


def bench(args: list[str]) -> int:
    """Run the bench ``args[0]`` with the rest of ``args``."""
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in BENCHES:
        print(f"error: unknown bench {name!r} (known: {', '.join(BENCHES)})", file=sys.stderr)
        return 2
    script = BENCH_DIR / f"{name}.sh"
    if script.is_file():
        return subprocess.run(["bash", str(script), *rest], check=False).returncode
    code = importlib.import_module(f"workshop.bench.{name}").main(rest)
    return 0 if code is None else code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if args[0] == "bench":
        return bench(args[1:])
    if args[0] not in COMMANDS:
        print(f"error: unknown command {args[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    from training.refusals import refusing  # imported only when asked: torch is slow

    return refusing(importlib.import_module(COMMANDS[args[0]][0]).main, args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
