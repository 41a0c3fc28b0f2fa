"""Apertium, the rule-based translator, as a reference point: ``apertium -u spa-eng`` over a list of sentences.

Installed by the system's package manager (``apt-get install apertium apertium-eng-spa``), never by this project;
``translate`` returns None where it is missing, and the caller (``workshop.bench.quality``) says so.
"""

from __future__ import annotations

import shutil
import subprocess


def translate(sources: list[str]) -> list[str] | None:
    """Apertium's spa-eng translations, one per source line (None when Apertium is not installed)."""
    if shutil.which("apertium") is None:
        return None
    text = "\n".join(s.replace("\n", " ") for s in sources) + "\n"
    out = subprocess.run(["apertium", "-u", "spa-eng"], input=text, capture_output=True, text=True, check=True).stdout
    lines = out.rstrip("\n").split("\n")
    if len(lines) != len(sources):
        raise RuntimeError(f"apertium returned {len(lines)} lines for {len(sources)} sources")
    return [line.strip() for line in lines]
