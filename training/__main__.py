"""``python -m training COMMAND ...``: one entry point for the training commands."""

from __future__ import annotations

import sys
from collections.abc import Callable

USAGE = """usage: python -m training COMMAND [ARGS...]

commands:
  train      train a model from a parallel corpus   (same as python -m training.train)
  evaluate   translate a test set and score it      (same as python -m training.evaluate)
  export     copy a finished run into a model folder (same as python -m training.export)

Run python -m training COMMAND --help for the options of a command."""


def command(name: str) -> Callable[[list[str] | None], int] | None:
    """The ``main`` of a command, imported only when asked for (torch is slow to import)."""
    if name == "train":
        from training.train import main
    elif name == "evaluate":
        from training.evaluate import main
    elif name == "export":
        from training.export import main
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
    return run(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
