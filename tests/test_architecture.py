"""The architecture panel: a diagram drawn from the model's config, one box per layer, the map shown lit."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_config
from streamlit.testing.v1 import AppTest

from lab.attention.sentence_maps import KINDS
from viz.architecture_diagram import LINE, ROW_PIXELS, WIDTH, _links, architecture_chart, architecture_frame


@pytest.mark.parametrize(("n_encoder", "n_decoder"), [(1, 1), (4, 3), (2, 6)])
def test_one_box_per_layer_of_each_stack_and_the_lit_block_is_the_one_asked_for(n_encoder: int, n_decoder: int) -> None:
    config = tiny_config(n_encoder_layers=n_encoder, n_decoder_layers=n_decoder)
    for kind in KINDS:
        n_layers = n_encoder if kind == "encoder" else n_decoder
        for layer in range(n_layers):
            frame = architecture_frame(config, kind, layer)
            layers = frame[frame["part"] == "layer"]
            assert sorted(layers.loc[layers["kind"] == "encoder", "layer"]) == list(range(n_encoder))
            assert sorted(layers.loc[layers["kind"] == "decoder", "layer"]) == list(range(n_decoder))
            blocks = frame[frame["part"] == "attention"]
            assert (blocks["kind"] == "encoder").sum() == n_encoder  # self-attention in every encoder layer
            assert (blocks["kind"] == "decoder").sum() == (blocks["kind"] == "cross").sum() == n_decoder
            (lit_block,) = frame[frame["lit"] & (frame["part"] == "attention")].itertuples()
            assert (lit_block.kind, lit_block.layer) == (kind, layer)
            (lit_layer,) = frame[frame["lit"] & (frame["part"] == "layer")].itertuples()
            assert lit_layer.layer == layer and lit_layer.kind == ("encoder" if kind == "encoder" else "decoder")


def test_the_diagram_prints_the_models_own_sizes_and_draws() -> None:
    config = tiny_config(d_model=48, n_heads=6, d_ff=96, src_vocab_size=37, tgt_vocab_size=37)
    frame = architecture_frame(config, "cross", 1)
    text = " ".join(frame["label"])
    assert "6 heads of 8" in text and "48 → 96 → 48" in text and "(37 × 48)" in text and "over 37 tokens" in text
    for below, above in zip(frame["y"], frame["y2"], strict=True):
        assert below < above
    spec = architecture_chart(frame, "This model", "lit: cross-attention, layer 2").to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rect", "rule", "text", "point"]
    json.dumps(spec)


def test_show_architecture_draws_one_chart_in_streamlit() -> None:
    def page() -> None:
        from conftest import tiny_config

        from views.architecture import show_architecture

        show_architecture(tiny_config(n_encoder_layers=3, n_decoder_layers=2), "decoder", 1)

    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception
    (chart,) = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    assert "3 encoder + 2 decoder layers" in spec["title"]["text"]
    assert "Decoder masked self-attention, layer 2" in spec["title"]["subtitle"]


@pytest.mark.parametrize(("shared", "tied"), [(True, True), (False, True), (False, False)])
def test_a_shared_embedding_is_drawn_once_under_both_stacks(shared: bool, tied: bool) -> None:
    frame = architecture_frame(tiny_config(share_embeddings=shared, tie_output=tied), "cross", 0)
    embeddings = frame[frame["kind"] == "embedding"]
    assert len(embeddings) == (1 if shared else 2)
    assert embeddings["x"].min() == frame["x"].min() and embeddings["x2"].max() == frame["x2"].max()
    (output,) = frame.loc[frame["label"].str.startswith("linear"), "label"]
    assert ("transposed" in output) == tied and ("shared embedding" in output) == (shared and tied)


def _inside(segment: dict, box: dict) -> bool:
    """An axis-parallel line runs through the inside of a box (not along or up to its edge)."""
    (x1, x2), (y1, y2) = sorted((segment["x"], segment["x2"])), sorted((segment["y"], segment["y2"]))
    return x1 < box["x2"] and x2 > box["x"] and y1 < box["y2"] and y2 > box["y"] and (x1 > box["x"] or y1 > box["y"])


def test_the_memory_goes_into_cross_attention_only_and_labels_fit_their_boxes() -> None:
    frame = architecture_frame(tiny_config(n_encoder_layers=3, n_decoder_layers=4), "decoder", 0)
    links = _links(frame).to_dict("records")
    blocks = frame[frame["part"].isin(["attention", "feed-forward"])].to_dict("records")
    assert not [(s, b["label"]) for s in links for b in blocks if _inside(s, b)]  # no line crosses a block
    crosses = frame[frame["kind"] == "cross"].to_dict("records")
    ends = [s for s in links if s["arrow"]]
    assert len(ends) == len(crosses)  # one arrow into each cross-attention block, on its top edge
    assert all(any(c["x"] < s["x2"] < c["x2"] and s["y2"] == c["y2"] for c in crosses) for s in ends)
    for box in frame[frame["label"] != ""].to_dict("records"):
        lines = box["label"].split("\n")
        assert (box["y2"] - box["y"]) * ROW_PIXELS >= LINE * len(lines) + 4, box  # two lines stay inside
        assert (box["x2"] - box["x"]) * WIDTH / 100 >= 6 * max(map(len, lines)), box  # ~6 px a character
