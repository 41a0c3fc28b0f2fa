"""An index loaded, or built and saved, in a background thread the page polls. ``cancel`` stops a build at its next
batch; ``hold`` is the server's heavy-tool slot, held for the build; between batches ``share`` lets a request in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from lab.neighbours.sentence_index import NeighboursError, SentenceIndex, load_or_build
from translate.translator import Translator

CANCELLED = "cancelled, as other models were asked for since: open this tab again to start it anew"


class IndexBuild:
    """One model's index in the making; the thread is the only writer of its fields, the page only reads them."""

    def __init__(
        self,
        translator: Translator,
        model_dir: Path,
        runs: Path,
        after: IndexBuild | None = None,
        slot: tuple[Callable[[], AbstractContextManager], Callable[[], None]] = (nullcontext, lambda: None),
    ) -> None:
        self.translator = translator  # the model it indexes (the page's cache holds one per weights version)
        self.model_dir, self.runs = Path(model_dir), Path(runs)
        self.done, self.total = 0, 0
        self.index: SentenceIndex | None = None
        self.loaded = False  # the index came from its file
        self.error: str | None = None
        self.started = self.counting = time.perf_counter()  # counting: when the pairs began to be encoded
        self._after = after  # a cancelled build of the same model: it ends before this one starts
        self._cancel, (self._hold, self._share) = threading.Event(), slot
        self._thread = threading.Thread(target=self._run, name=f"neighbours {self.model_dir.name}", daemon=True)

    def start(self) -> IndexBuild:
        self._thread.start()
        return self

    def cancel(self) -> None:
        self._cancel.set()

    def _progress(self, done: int, total: int) -> None:
        if self._cancel.is_set():
            raise InterruptedError(CANCELLED)  # inside the build: nothing is saved
        self._share()
        if done == 0:
            self.counting = time.perf_counter()
        self.done, self.total = done, total

    def _run(self) -> None:
        try:
            if self._after is not None:
                self._after.wait()
            with self._hold():
                self._progress(0, 0)
                self.index, self.loaded = load_or_build(self.translator, self.model_dir, self.runs, self._progress)
        except (NeighboursError, OSError) as err:  # InterruptedError, the cancel, is an OSError
            self.error = str(err)
        except Exception as err:  # anything else too: the page would otherwise wait for it for ever
            self.error = f"{type(err).__name__}: {err}"

    @property
    def finished(self) -> bool:
        return self.index is not None or self.error is not None

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate measured so far; None before the first batch."""
        if not self.done or not self.total:
            return None
        return (self.total - self.done) * (time.perf_counter() - self.counting) / self.done

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends; True when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
