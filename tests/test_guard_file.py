"""A name_guard.json is checked on load (translate/guard_file.py): a field of the wrong type, a list over its size,
an empty or shapeless stand-in is one line naming the file, the field and what was expected, never a traceback at
translate time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_name_guard import EVERYONE, LISTS, corpus

from model.weights import ModelLoadError
from translate.guard_file import MAX_LISTED, MAX_PLACE_WORDS, MAX_STAND_INS
from translate.name_guard import NameGuard, build


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A good guard file's content."""
    path = tmp_path_factory.mktemp("guard") / "name_guard.json"
    build(corpus(), "es", LISTS, EVERYONE).save(path)
    return json.loads(path.read_text(encoding="utf-8"))


BAD_FIELDS = {  # field: a wrong value, each once accepted or a traceback at translate time
    "lowercase": [["ana"], {"ana": "3"}, {"ana": -1}, {"ana": True}, None],
    "capital": [{"ana": 1.5}],
    "initial": ["ana"],
    "translated": ["viena", [1]],
    "accented": [{"nino": 1}],
    "people": [{"ana": "girl"}, ["ana"]],
    "places": ["Sevilla", [" ".join(["a"] * (MAX_PLACE_WORDS + 1))], ["x"] * (MAX_LISTED + 1)],
    "shape": [{"abc": "1"}, {"abc": float("nan")}],
    "stand_ins": [
        {"male": [""]},  # "I saw in 38.Ana"
        {"male": "Tom"},
        {"alien": ["Zork"]},
        {"number": ["3a"]},
        {"male": ["Tom"], "place": ["Tom"]},
        {"male": ["Tom Jones"]},
        {"number": [str(n) for n in range(20_000)]},  # each sentence with a number quadratic in these
        {"number": [str(n) for n in range(MAX_STAND_INS + 1)]},
    ],
    "lang": [3, ""],
}


@pytest.mark.parametrize(
    "field, bad", [(field, bad) for field, bads in BAD_FIELDS.items() for bad in bads], ids=lambda v: str(v)[:30]
)
def test_a_guard_file_with_a_field_of_the_wrong_kind_is_one_line_naming_it(
    saved: dict, tmp_path: Path, field: str, bad: object
) -> None:
    (tmp_path / "name_guard.json").write_text(json.dumps({**saved, field: bad}), encoding="utf-8")
    with pytest.raises(ModelLoadError) as error:
        NameGuard.load(tmp_path / "name_guard.json")
    message = str(error.value)
    assert "\n" not in message and len(message) < 400
    assert message.startswith(f"{tmp_path / 'name_guard.json'}: not a name guard this lab can read: {field}: expected")


def test_a_guard_file_that_is_not_an_object_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "name_guard.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"read: the file: expected a JSON object; write it again"):
        NameGuard.load(tmp_path / "name_guard.json")
