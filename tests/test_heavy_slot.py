"""The heavy tools' server-wide pool: one request computes at a time, the next waits in line and is told so, and a
request that waits past the bound is refused in one line; a slot is never left taken."""

from __future__ import annotations

import threading
import time

import pytest

from views import heavy_slot


def wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_second_request_waits_for_the_first_and_then_runs() -> None:
    order: list[str] = []
    first_in, first_may_go = threading.Event(), threading.Event()

    def first() -> None:
        with heavy_slot.slot():
            order.append("first starts")
            first_in.set()
            first_may_go.wait(10)
            order.append("first ends")

    def second() -> None:
        with heavy_slot.slot():
            order.append("second starts")

    a = threading.Thread(target=first)
    a.start()
    first_in.wait(10)
    b = threading.Thread(target=second)
    b.start()
    wait_until(lambda: heavy_slot.asking() == 2)  # the second is in line, not running
    assert order == ["first starts"]
    first_may_go.set()
    a.join(10)
    b.join(10)
    assert order == ["first starts", "first ends", "second starts"]
    assert heavy_slot.asking() == 0


def test_a_request_that_waits_past_the_bound_is_refused_and_leaves_no_slot_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heavy_slot, "MAX_WAIT_SECONDS", 0.1)
    refused: list[str] = []

    def waiter() -> None:
        try:
            with heavy_slot.slot():
                refused.append("ran")
        except heavy_slot.Busy as err:
            refused.append(str(err))

    with heavy_slot.slot():
        t = threading.Thread(target=waiter)
        t.start()
        t.join(10)
    assert refused == [f"The server's heavy tools stayed busy for 0.1 s ({heavy_slot.SLOTS} at a time): try again."]
    assert heavy_slot.asking() == 0
    with heavy_slot.slot():  # free again
        pass


def test_a_slot_is_released_when_the_tool_raises() -> None:
    with pytest.raises(KeyError), heavy_slot.slot():
        raise KeyError("a rerun or a closed tab")
    assert heavy_slot.asking() == 0


def test_the_page_says_a_request_waits_only_while_another_holds_the_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []

    class Note:
        def info(self, text: str) -> None:
            shown.append(text)

        def empty(self) -> None:
            shown.append("cleared")

    monkeypatch.setattr(heavy_slot.st, "empty", Note)
    with heavy_slot.in_line("ranking"):
        pass
    assert shown == ["cleared"]  # nobody ahead: no note
    shown.clear()
    with heavy_slot.slot(), heavy_slot.in_line("ranking"):
        pass
    assert shown == [
        "Heavy tools run one at a time on this server: your ranking waits for another visitor's request, then runs.",
        "cleared",
    ]


def test_a_request_behind_its_own_sessions_earlier_one_is_told_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run pressed again while the first press computes: the wait is for this session's own request."""
    shown: list[str] = []

    class Note:
        def info(self, text: str) -> None:
            shown.append(text)

        def empty(self) -> None:
            pass

    monkeypatch.setattr(heavy_slot.st, "empty", Note)
    monkeypatch.setattr(heavy_slot, "session", lambda: "my tab")
    with heavy_slot.slot(), heavy_slot.in_line("ranking"):
        pass
    monkeypatch.setattr(heavy_slot, "session", lambda: "another tab")
    with heavy_slot.slot():
        monkeypatch.setattr(heavy_slot, "session", lambda: "my tab")
        with heavy_slot.in_line("ranking"):
            pass
    line = "Heavy tools run one at a time on this server: your ranking waits for {}, then runs."
    assert shown == [line.format("your earlier request"), line.format("another visitor's request")]  # was twice this
    assert heavy_slot.asking() == 0 and not heavy_slot._asking  # no session is remembered after its requests


def test_share_lets_a_waiting_request_run_before_the_holder_goes_on() -> None:
    order: list[str] = []
    holder_in, holder_may_share = threading.Event(), threading.Event()

    def holder() -> None:  # an index build: one slot held across batches
        with heavy_slot.slot():
            holder_in.set()
            heavy_slot.share()  # nobody waits: the slot is kept
            order.append("batch 1")
            holder_may_share.wait(10)
            heavy_slot.share()
            order.append("batch 2")

    def request() -> None:
        with heavy_slot.slot():
            order.append("request")

    a = threading.Thread(target=holder)
    a.start()
    holder_in.wait(10)
    b = threading.Thread(target=request)
    b.start()
    wait_until(lambda: heavy_slot.asking() == 2)
    assert order == ["batch 1"]  # the request waits while the holder works
    holder_may_share.set()
    a.join(10)
    b.join(10)
    assert order == ["batch 1", "request", "batch 2"]
    assert heavy_slot.asking() == 0
