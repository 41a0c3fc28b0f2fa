"""The lab's Streamlit app on a free local port, and Debian's Chromium to look at it: for the browser benches and tests.

``running_app`` starts ``streamlit run app.py`` with the given environment, waits until it answers (failing at once
if it exits), yields its URL and stops it. Chromium is always Debian's (never a browser Playwright downloads).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from translate.settings import REPO_ROOT

REPO = REPO_ROOT
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {server.returncode}")
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout:.0f} s")


@contextmanager
def running_app(
    env: Mapping[str, str], log: Path | None = None, timeout: float = 60.0, script: str = "app.py", repo: Path = REPO
) -> Iterator[str]:
    """``streamlit run app.py`` (or ``script``) of ``repo`` (this checkout, or another's) on a free local port with
    ``env``, its output in ``log`` (or dropped); yields the URL."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    out = log.open("w") if log is not None else subprocess.DEVNULL
    server = subprocess.Popen(command, cwd=repo, env=dict(env), stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, server, timeout)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        if log is not None:
            out.close()


def view_pill(page: Any, name: str) -> Any:
    """The pill that opens the view ``name`` under the maps (``page``: Playwright's Page, sync or async)."""
    return page.get_by_role("radiogroup", name="Look closer").get_by_role("radio", name=name, exact=True)
