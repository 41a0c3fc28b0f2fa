"""An index built (or loaded from its cache) in a background thread, so the page never waits for it: the page
polls ``progress`` and shows the index once ``index`` is set."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lab.neighbours.state_index import NeighbourIndex, load_or_build
from lab.neighbours.training_pairs import NeighboursError
from translate.translator import Translator


class IndexBuild:
    """One model's index in the making; the thread is the only writer of its fields, the page only reads them."""

    def __init__(self, translator: Translator, model_dir: Path, runs: Path) -> None:
        self.translator = translator  # the model it indexes (the page's cache holds one per weights version)
        self.model_dir, self.runs = Path(model_dir), Path(runs)
        self.done, self.total = 0, 0
        self.index: NeighbourIndex | None = None
        self.loaded = False  # the index came from its cache file
        self.error: str | None = None
        self.started = time.perf_counter()
        self._thread = threading.Thread(
            target=self._run, args=(translator,), name=f"neighbours {self.model_dir.name}", daemon=True
        )

    def start(self) -> IndexBuild:
        self._thread.start()
        return self

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _run(self, translator: Translator) -> None:
        try:
            self.index, self.loaded = load_or_build(translator, self.model_dir, self.runs, self._progress)
        except (NeighboursError, OSError) as err:
            self.error = str(err)
        except Exception as err:  # anything else too: the page would otherwise wait for it for ever
            self.error = f"{type(err).__name__}: {err}"

    @property
    def finished(self) -> bool:
        return self.index is not None or self.error is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (tests); True when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
