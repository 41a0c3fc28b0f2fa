"""``python -m training COMMAND ...``: the lab's one command line for training, and where the lab's doors are listed."""

from __future__ import annotations

import sys
from collections.abc import Callable

# Every entry point of the lab. training.calibrate and training.reference_points have a command line too, but only
# the Train page runs them (as processes, for its estimate and its verdict): they are not listed.
USAGE = """usage: python -m training COMMAND [ARGS...]

commands:
  train      train a model from a parallel corpus     (same as python -m training.train)
  evaluate   translate a test set and score it        (same as python -m training.evaluate)
  export     copy a finished run into a model folder  (same as python -m training.export)
  guard      write a model's name guard from its training pairs (translate/name_guard.py)

Run python -m training COMMAND --help for the options of a command.

the lab's other doors:
  python -m translate TEXT    translate with a model (--help for beams, n-best)
  python -m data.download     fetch the Tatoeba Spanish-English corpus
  streamlit run app.py        the app: the Translate and Train pages

How the shipped model was made and is measured (gate, phrases, distillation, benches): python -m workshop --help"""


def command(name: str) -> Callable[[list[str] | None], int] | None:
    """The ``main`` of a command, imported only when asked for (torch is slow to import)."""
    if name == "train":
        from training.train import main
    elif name == "evaluate":
        from training.evaluate import main
    elif name == "export":
        from training.export import main
    elif name == "guard":
        from training.export import guard_main as main
    else:
        return None
    return main


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    run = command(args[0])
    if run is None:
        print(f"error: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    from training.refusals import refusing

    return refusing(run, args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
