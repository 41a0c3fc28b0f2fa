"""The house rules that keep the code readable in an hour (../shared/STYLE.md), checked on the source's AST."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("model", "data", "translate", "training", "lab", "viz", "views", "jobs", "bench", "pages")


def sources() -> list[Path]:
    files = [ROOT / "app.py"] + [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in files if p.is_file()]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(path: Path) -> set[str]:
    """The project modules ``path`` imports at module level (imports inside functions are deliberate: lazy)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_model_is_the_network_and_imports_nothing_else_of_the_project() -> None:
    allowed = {"torch", "safetensors", "numpy", "model"} | set(sys.stdlib_module_names)
    for path in (ROOT / "model").rglob("*.py"):
        outside = {name for name in project_imports(path) if name.split(".")[0] not in allowed}
        assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_no_import_cycle() -> None:
    modules = {module_name(p): p for p in sources()}
    graph = {m: {n for n in project_imports(p) if n in modules and n != m} for m, p in modules.items()}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                pytest.fail(f"import cycle: {' -> '.join([*path[path.index(other) :], other])}")
            if other not in state:
                visit(other, [*path, other])
        state[module] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])


def test_no_function_is_over_60_lines() -> None:
    long = [f"{p.relative_to(ROOT)}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1})"
            for p in sources() for f in functions(p) if f.end_lineno - f.lineno + 1 > 60]  # fmt: skip
    assert not long


def test_no_training_function_takes_more_than_6_parameters() -> None:
    for path in (ROOT / "training").rglob("*.py"):
        for f in functions(path):
            names = [
                a.arg for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs if a.arg not in ("self", "cls")
            ]
            assert len(names) <= 6, f"{path.relative_to(ROOT)}:{f.lineno} {f.name}({', '.join(names)})"


def test_every_module_has_a_name_of_its_own() -> None:
    stems = defaultdict(list)
    for path in sources():
        if path.stem not in ("__init__", "__main__"):
            stems[path.stem].append(str(path.relative_to(ROOT)))
    assert not {stem: paths for stem, paths in stems.items() if len(paths) > 1}
    assert not sorted(set(stems) & set(sys.stdlib_module_names))


def test_lab_is_grouped_by_concern() -> None:
    for folder in [ROOT / "lab", *(p for p in (ROOT / "lab").iterdir() if p.is_dir() and p.name != "__pycache__")]:
        entries = [p for p in folder.iterdir() if p.name != "__pycache__"]
        assert len(entries) <= 12, f"{folder.relative_to(ROOT)}: {len(entries)} entries"
