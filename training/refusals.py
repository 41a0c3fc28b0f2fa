"""The errors a user's input causes (a path, a file, a setting, a model folder that lies): each command line prints
one as one line, ``error: …``, and exits with status 2, never a traceback. The doors (``python -m training``,
``python -m workshop``) catch them for every command behind them."""

from __future__ import annotations

import sys
from collections.abc import Callable

from data.readers import CorpusError
from data.tokenizer import TokenizerError
from model.typed_config import ConfigError
from model.weights import ModelLoadError
from training.checkpoint import StateError
from training.outputs import OutputError
from training.phrases import PhraseListError
from training.run_lock import RunLocked

REFUSED = (
    ConfigError,
    CorpusError,
    TokenizerError,
    ModelLoadError,
    OutputError,
    PhraseListError,
    StateError,
    RunLocked,
)


def refusing(main: Callable[[list[str]], int | None], argv: list[str]) -> int:
    """``main(argv)``'s status; a refusal (or an OSError: a disk, a permission) printed as one line, status 2."""
    try:
        code = main(argv)
    except REFUSED as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    return 0 if code is None else code
