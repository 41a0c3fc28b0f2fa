"""The house rules that keep the code readable in an hour (../shared/STYLE.md), checked on the source's AST."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAB = ("model", "data", "translate", "training", "lab", "viz", "views", "jobs", "pages")  # what a learner reads
PACKAGES = (*LAB, "workshop")  # the workshop: how the shipped model was made and is measured


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
    long = [
        f"{p.relative_to(ROOT)}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1})"
        for p in sources()
        for f in functions(p)
        if f.end_lineno - f.lineno + 1 > 60
    ]
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


# A test file that checks a feature spanning several modules, named after the feature; every other test file is
# named after the module or package it tests.
FEATURE_TESTS = {
    "browser": "the app in a real browser",
    "house": "these rules",
    "keep_as_typed": "spans marked [[ ]] kept as typed: the guard, the translator and the CLI",
    "shipped_model": "checkpoints/es-en and checkpoints/en-es",
    "requirements": "requirements*.txt, pyproject.toml and .ci/run say the same",
    "step_panels": "the Step by step tab's smaller panels (viz and lab)",
    "steps_app": "the Step by step and positional tabs through AppTest",
    "train_page": "pages/1_Train.py through AppTest",
    "translation_words_browser": "the translation as a text in a real browser: shading, hover, alternatives, [[ ]]",
    "page_switch": "what survives a trip from one page to the other and back",
    "disk_full": "a full disk at each write of a training run (weights, state, metrics)",
    "english_first": "an English-first corpus from upload to the Translate page, in a real browser",
    "hostile_files": "every file the lab opens from a user, lying or hostile, refused in one line",
    "every_command": "every command that takes a path, handed a hostile one",
    "tour": "docs/tour.md: its links and line anchors",
    "name_guard_restore": "the name guard puts every original back in one pass, over 10,000 generated sentences",
    "name_guard_bounds": "the name guard's work bounded: long pools, retries, invisible and combining characters",
    "name_guard_reading": "what the name guard reads on the shipped guard: language, phrases, gender, dates, cues",
}


def all_imports(path: Path) -> set[str]:
    """Every absolute import of ``path``, lazy ones inside functions included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_nothing_in_the_lab_imports_the_workshop() -> None:
    """The lab runs a workshop tool as a process (``python -m workshop gate``), never imports it, lazily or not."""
    lab = [ROOT / "app.py"] + [p for package in LAB for p in sorted((ROOT / package).rglob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in lab
        for name in sorted(all_imports(path))
        if name.split(".")[0] == "workshop"
    ]
    assert not found, found


def test_the_workshop_door_lists_every_tool() -> None:
    """``python -m workshop`` reaches every workshop module that has a ``main`` and every bench script."""
    from workshop.__main__ import BENCHES, COMMANDS

    def has_main(path: Path) -> bool:
        return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(path.read_text()).body)

    tools = {f"workshop.{p.stem}" for p in (ROOT / "workshop").glob("*.py") if p.stem[0] != "_" and has_main(p)}
    assert tools == {module for module, _ in COMMANDS.values()}
    benches = {p.stem for p in (ROOT / "workshop" / "bench").glob("*.py") if has_main(p)}
    assert benches | {p.stem for p in (ROOT / "workshop" / "bench").glob("*.sh")} == set(BENCHES)


def test_no_package_import_cycle() -> None:
    """Top-level packages depend one way: a lazy import inside a function still counts."""
    tops = {"app", *PACKAGES}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sources():
        here = module_name(path).split(".")[0]
        graph[here] |= {name.split(".")[0] for name in all_imports(path)} & tops - {here}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    cycles = sorted(f"{a} -> {b} -> ... -> {a}" for a in tops for b in graph[a] if reaches(b, a, {b}))
    assert not cycles, cycles


def environment_reads(path: Path) -> list[str]:
    """``os.environ`` / ``os.getenv`` / ``os.putenv`` / ``environ`` as written in ``path``, with their lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv", "environb"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names if "env" in a.name]
    return found


def test_model_reads_no_environment_variable_and_no_repository_path() -> None:
    """``model/`` is the network: settings and the repository's paths live in ``translate/settings.py``."""
    reads = [read for path in sorted((ROOT / "model").rglob("*.py")) for read in environment_reads(path)]
    assert not reads, reads
    here = [str(p.relative_to(ROOT)) for p in (ROOT / "model").rglob("*.py") if "__file__" in p.read_text()]
    assert not here, f"{here} locate files from their own place in the repository"


def python_files() -> list[Path]:
    """Every .py file of the repository (not virtual environments, caches or run folders)."""
    skip = {".venv", "venv", "runs", "checkpoints", "__pycache__"}
    files = ROOT.rglob("*.py")
    return sorted(p for p in files if not (set(p.relative_to(ROOT).parts[:-1]) & skip or p.name.startswith(".")))


def fmt_directives(path: Path) -> list[int]:
    """Lines of ``path`` whose comment overrules the formatter (``fmt: skip`` / ``fmt: off``)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    comments = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    return [line for line, text in comments if text.lstrip("# ").startswith(("fmt: skip", "fmt: off", "fmt:skip"))]


def test_no_fmt_skip_ruff_format_decides() -> None:
    offending = {str(p.relative_to(ROOT)): len(lines) for p in python_files() if (lines := fmt_directives(p))}
    assert not offending, f"{sum(offending.values())} fmt directives in {len(offending)} files: {offending}"


def test_every_test_file_is_named_after_a_module_or_package() -> None:
    names = {"app"} | set(PACKAGES)
    for path in sources():
        names |= set(path.relative_to(ROOT).with_suffix("").parts) - {"__init__", "__main__"}
    tests = sorted(p.stem.removeprefix("test_") for p in (ROOT / "tests").glob("test_*.py"))
    unnamed = [f"tests/test_{t}.py" for t in tests if t not in names and t not in FEATURE_TESTS]
    assert not unnamed, f"named after no module, package or listed feature: {unnamed}"
    assert not sorted(set(FEATURE_TESTS) - set(tests)), "FEATURE_TESTS names a test file that no longer exists"
