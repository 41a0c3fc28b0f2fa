"""The views under the maps (app.py's ``VIEWS``): every view is a function of one ``TabContext``, and nothing else."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"


def tabs() -> list[tuple[str, str]]:
    """(module of views/, view) of every row of app.py's VIEWS, read from its source (importing app.py runs the page)."""
    for node in ast.parse(APP.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["VIEWS"]:
            assert isinstance(node.value, ast.Tuple)
            return [(row.elts[1].value, row.elts[2].value) for row in node.value.elts]  # type: ignore[attr-defined]
    raise AssertionError("app.py has no VIEWS")


def test_every_tab_view_takes_the_one_tab_context() -> None:
    found = tabs()
    assert len(found) == 13
    for module, name in found:
        view = getattr(importlib.import_module(f"views.{module}"), name)
        parameters = list(inspect.signature(view).parameters.values())
        assert [(p.name, p.annotation, p.kind) for p in parameters] == [
            ("ctx", "TabContext", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ], f"views.{module}.{name}"
