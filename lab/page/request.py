"""What a shown result was computed from, and what has changed on the page since (a stale result is marked)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """The model, text and decoding settings at the moment Translate was pressed."""

    model: str  # model directory ("" when no model is available)
    model_label: str  # as the model picker names it
    text: str
    beam_size: int  # 1 = greedy
    length_penalty: float
    n_best: int
    name_guard: bool = True  # names, places and numbers read as stand-ins and put back (translate/name_guard.py)

    @property
    def settings(self) -> str:
        guard = "" if self.name_guard else ", name guard off"
        if self.beam_size <= 1:
            return f"greedy{guard}"
        return f"beam search, beam {self.beam_size}, length penalty {self.length_penalty:g}, {self.n_best}-best{guard}"


def changes(shown: Request, now: Request) -> list[str]:
    """What differs between the request behind the shown result and the page now; empty when it still matches."""
    out = []
    if shown.text != now.text:
        out.append("the text")
    if shown.model != now.model:
        out.append("the model")
    if (shown.beam_size, shown.length_penalty, shown.n_best) != (now.beam_size, now.length_penalty, now.n_best):
        out.append("the decoding settings")
    if shown.name_guard != now.name_guard:
        out.append("the name guard")
    return out


def stale_note(shown: Request, now: Request) -> str:
    """One sentence telling the reader the result is out of date, or "" when it still matches the page."""
    changed = changes(shown, now)
    if not changed:
        return ""
    listed = changed[0] if len(changed) == 1 else f"{', '.join(changed[:-1])} and {changed[-1]}"
    return (
        f"Out of date: {listed} changed since this result was computed. It still shows the translation of the "
        "text below by the model named below; press Translate to update it."
    )
