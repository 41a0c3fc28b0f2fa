"""Beam search drawn as a tree, from the same replay the Step tab shows: its nodes, their parents and fates."""

from __future__ import annotations

import itertools

import pytest

from lab.attention.step_choices import CHOSEN, ENDED, FATES, KEPT, PRUNED, Beam, BeamStep, beam_trace, beam_tree
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from viz.choices import beam_tree_chart, tree_frame

BEAM = 3


def hypothesis(*ids: int, log_prob: float = -1.0) -> Beam:
    return Beam(list(ids), [f"t{i}" for i in ids], "", log_prob, log_prob)


def check_tree(rows: list[dict[str, object]], chosen: list[int], beam_size: int) -> None:
    """The invariants of any beam tree: parents exist, at most ``beam_size`` alive per step, one chosen path."""
    nodes = {row["node"]: row for row in rows}
    assert len(nodes) == len(rows)  # one node per prefix
    assert [row["node"] for row in rows if row["parent"] is None] == [""]  # one root: <s>
    for row in rows:
        if row["parent"] is not None:
            parent = nodes[row["parent"]]  # every node's parent is in the tree, one step earlier
            assert parent["step"] == row["step"] - 1
    for step in {row["step"] for row in rows} - {0}:
        alive = [row for row in rows if row["step"] == step and not row["ended"]]
        assert len(alive) <= beam_size
        assert all(row["fate"] in (CHOSEN, ENDED) for row in rows if row["step"] == step and row["ended"])
    path = sorted((row for row in rows if row["fate"] == CHOSEN), key=lambda row: row["step"])
    assert [int(i) for i in str(path[-1]["node"]).split()] == chosen  # the path ends at the hypothesis shown
    assert all(b["parent"] == a["node"] for a, b in itertools.pairwise(path))  # and is one unbroken path


def test_fates_on_a_hand_made_search() -> None:
    """Step 1 keeps [5] and [6]; step 2 extends only [5]: [5 7] and [5 8] live on, [6] is pruned, [5 EOS] ends."""
    steps = [
        BeamStep(0, [hypothesis(5), hypothesis(6)], []),
        BeamStep(1, [hypothesis(5, 7), hypothesis(5, 8)], [hypothesis(5, 3)]),
        BeamStep(2, [], [hypothesis(5, 7, 3), hypothesis(5, 8, 3)]),
    ]
    rows = beam_tree(steps, [5, 7, 3])
    check_tree(rows, [5, 7, 3], 2)
    fate = {row["node"]: row["fate"] for row in rows}
    assert fate == {
        "": CHOSEN,
        "5": CHOSEN,
        "6": PRUNED,
        "5 7": CHOSEN,
        "5 8": KEPT,
        "5 3": ENDED,
        "5 7 3": CHOSEN,
        "5 8 3": ENDED,
    }


def test_layout_puts_every_node_once_and_children_between_their_first_and_last_leaf() -> None:
    steps = [
        BeamStep(0, [hypothesis(5), hypothesis(6)], []),
        BeamStep(1, [hypothesis(5, 7), hypothesis(6, 9)], [hypothesis(5, 3)]),
        BeamStep(2, [], [hypothesis(5, 7, 3), hypothesis(6, 9, 3)]),
    ]
    frame = tree_frame(beam_tree(steps, [5, 7, 3]))
    assert frame["y"].notna().all()
    leaves = frame[~frame["node"].isin(set(frame["parent"].dropna()))]
    assert sorted(leaves["y"]) == list(range(len(leaves)))  # leaves on distinct rows, no gaps
    for _, row in frame[frame["parent"].notna()].iterrows():  # edges start where the parent is drawn
        parent = frame[frame["node"] == row["parent"]].iloc[0]
        assert (row["parent_step"], row["parent_y"]) == (parent["step"], parent["y"])
    with pytest.raises(ValueError, match="parent"):
        tree_frame(
            [{"node": "1", "parent": "0", "step": 1, "token": "a", "hypothesis": "a", "log_prob": 0.0, "fate": KEPT}]
        )


def test_chart_colours_each_fate_and_marks_the_current_step() -> None:
    steps = [BeamStep(0, [hypothesis(5), hypothesis(6)], []), BeamStep(1, [], [hypothesis(5, 3), hypothesis(6, 3)])]
    spec = beam_tree_chart(tree_frame(beam_tree(steps, [5, 3])), "Beam search tree", FATES, current=2).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["rule", "rule", "circle", "text"]  # current step, edges, nodes, tokens
    assert spec["layer"][2]["encoding"]["color"]["scale"]["domain"] == list(FATES)


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_the_tree_of_the_shipped_models_search_ends_in_its_best_hypothesis(translator: Translator) -> None:
    result = translator.translate("El gato negro duerme en la casa.", DecodeOptions(beam_size=BEAM, n_best=BEAM))
    steps = beam_trace(translator.model, translator.tokenizer, result.src_ids, beam_size=BEAM)
    for hyp in result.candidates:  # any hypothesis of the n-best list can be the one shown
        check_tree(beam_tree(steps, hyp.tokens), hyp.tokens, BEAM)
    frame = tree_frame(beam_tree(steps, result.best.tokens))
    assert frame["step"].max() == len(steps)
