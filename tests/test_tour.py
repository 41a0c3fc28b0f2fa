"""docs/tour.md cannot rot: every link into the repository names a file that exists, every ``#Lnn`` anchor the very
line where the function, class or method named in the link's text is defined (its ``def`` or ``class``, not a
decorator above it); the tour stays short, its measured tokenizer output stays true, and the README's first screen
links it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from data.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
TOUR = ROOT / "docs" / "tour.md"
MAX_WORDS = 3000
README_SCREEN = 40  # lines: the README's first screen
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")  # [text](target)
NAME = re.compile(r"`([^`]+)`")  # `Class.method` or `function` in a link's text
ANCHOR = re.compile(r"^L(\d+)$")


def links(text: str) -> list[tuple[str, str]]:
    """(text, target) of every markdown link in ``text`` that points into the repository (no URL, no bare #anchor)."""
    return [
        (t, target)
        for t, target in LINK.findall(text)
        if "://" not in target and not target.startswith(("#", "mailto:"))
    ]


def definitions(source: str) -> dict[str, list[int]]:
    """Qualified name ("Class.method", "function") -> the lines its ``def`` or ``class`` statements are on."""
    found: dict[str, list[int]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.setdefault(prefix + child.name, []).append(child.lineno)
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(source), "")
    return found


def link_problem(text: str, target: str, base: Path) -> str:
    """Why the link ``[text](target)`` of a file in ``base`` is broken, or "" when it holds."""
    where, _, anchor = target.partition("#")
    path = (base / where).resolve()
    if not path.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not path.is_file():
        return f"{target}: no such file"
    line = ANCHOR.match(anchor)
    if not line:
        return ""  # no line anchor (or a heading's): the file is enough
    n, lines = int(line.group(1)), path.read_text(encoding="utf-8").splitlines()
    if not 1 <= n <= len(lines):
        return f"{target}: the file has {len(lines)} lines"
    if path.suffix != ".py":
        return ""
    names = NAME.findall(text)
    if not names:
        return f"{target}: a line anchor into Python names no `function` or `Class.method` in the link's text"
    name = names[-1]
    at = definitions(path.read_text(encoding="utf-8")).get(name)
    if not at:
        return f"{target}: {name} is not defined in {where}"
    if n not in at:
        return f"{target}: {name} is defined at line {', '.join(map(str, at))}, not at line {n}"
    return ""


def test_every_link_of_the_tour_points_at_a_file_and_a_definition_that_exist() -> None:
    found = links(TOUR.read_text(encoding="utf-8"))
    anchored = [target for _, target in found if "#L" in target]
    assert len(anchored) >= 20, "the tour's links were not found: has the link syntax changed?"
    problems = [p for text, target in found if (p := link_problem(text, target, TOUR.parent))]
    assert not problems, "docs/tour.md: move the tour with the code it names:\n" + "\n".join(problems)


def test_the_tour_is_at_most_3000_words() -> None:
    words = len(TOUR.read_text(encoding="utf-8").split())
    assert words <= MAX_WORDS, f"docs/tour.md has {words} words; at most {MAX_WORDS}"


def test_the_tours_tokenizer_output_is_the_shipped_tokenizers() -> None:
    tokenizer = Tokenizer.load(ROOT / "checkpoints" / "es-en")
    ids = tokenizer.encode_src("Hola mundo")
    text = TOUR.read_text(encoding="utf-8")
    assert re.search(rf"source pieces +{re.escape(' '.join(tokenizer.src_pieces(ids)))}\n", text)
    assert re.search(rf"source ids +{' '.join(map(str, ids))}\n", text)


def test_the_readme_links_the_tour_on_its_first_screen() -> None:
    screen = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:README_SCREEN])
    assert "docs/tour.md" in [target for _, target in links(screen)]


def test_a_drifted_anchor_is_caught() -> None:
    """The check itself: an anchor one line off its definition, and a name the file does not define, fail."""
    base = ROOT / "docs"
    (line,) = definitions((ROOT / "model" / "attention.py").read_text(encoding="utf-8"))["padding_mask"]
    assert not link_problem("model/attention.py `padding_mask`", f"../model/attention.py#L{line}", base)
    assert link_problem("model/attention.py `padding_mask`", f"../model/attention.py#L{line - 1}", base)
    assert link_problem("model/attention.py `padding_mask`", f"../model/attention.py#L{line + 1}", base)
    assert link_problem("model/attention.py `no_such_thing`", "../model/attention.py#L1", base)
    assert link_problem("`x`", "../no/such/file.py#L1", base)
