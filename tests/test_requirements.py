"""The requirements files and pyproject.toml say the same thing: the lab's, the workshop's and the developer's."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def listed(name: str) -> tuple[list[str], list[str]]:
    """A requirements file's packages (comments dropped) and the files it includes with ``-r``."""
    lines = [line.split("#")[0].strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("-r")], [
        line[3:] for line in lines if line[:3] == "-r "
    ]


def test_pyproject_lists_what_the_requirements_files_list() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = project["optional-dependencies"]
    assert listed("requirements.txt") == (project["dependencies"], [])
    assert listed("requirements-workshop.txt") == (groups["workshop"], ["requirements.txt"])
    dev, included = listed("requirements-dev.txt")
    assert ["translation-lab[workshop]", *dev] == groups["dev"]
    assert included == ["requirements.txt", "requirements-workshop.txt"]


def test_ci_and_the_readme_install_everything_the_tests_need() -> None:
    assert "-r requirements-dev.txt" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -r requirements-dev.txt" in (ROOT / "README.md").read_text(encoding="utf-8")
