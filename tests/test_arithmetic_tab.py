"""The arithmetic view's value strips: the colour a negative value is drawn in is the one the caption names, and the
value table prints no "None"."""

from __future__ import annotations

import re

import numpy as np
import vl_convert
from streamlit.testing.v1 import AppTest

from viz.arithmetic import term_frame, vector_strips
from viz.heatmap import DIVERGING_KEY, NEGATIVE_COLOUR, POSITIVE_COLOUR

FILL = re.compile(r'aria-label="[^"]*value: ([^";]+)"[^>]*fill="rgb\((\d+), (\d+), (\d+)\)"')


def _hue(red: int, blue: int) -> str:
    return "red" if red > blue else "blue"


def drawn_colours(chart_spec: dict) -> dict[float, str]:
    """Each value's cell colour, as the chart renders it (Vega, through vl-convert): "red" or "blue"."""
    svg = vl_convert.vegalite_to_svg(chart_spec)
    found = {float(v.replace("−", "-")): _hue(int(r), int(b)) for v, r, _, b in FILL.findall(svg)}
    assert found, "no cells found in the rendered chart"
    return found


def test_the_strips_draw_negative_and_positive_in_the_colours_the_caption_names() -> None:
    values = np.array([[-1.5, 0.75, 1.5]])
    frame = term_frame(["a"], np.array([1.0]), values, [0], values[0])
    colours = drawn_colours(vector_strips(frame, "t").properties(width=120).to_dict())
    assert colours[-1.5] == NEGATIVE_COLOUR and colours[1.5] == colours[0.75] == POSITIVE_COLOUR
    assert DIVERGING_KEY.lower().startswith(f"{NEGATIVE_COLOUR} is negative, {POSITIVE_COLOUR} positive")


def _values_view() -> None:
    import numpy as np

    from lab.attention.head_contribution import HeadContribution
    from views.arithmetic_tab import show_values

    rng = np.random.default_rng(0)
    weights = np.array([0.5, 0.2, 0.1, 0.1, 0.05, 0.05, 0.0])
    values = rng.normal(size=(7, 4))
    result = HeadContribution(
        keys=[f"k{j}" for j in range(7)],
        weights=weights,
        values=values,
        top=np.arange(5),
        context=weights @ values,
        w_o=rng.normal(size=(8, 4)),
        contribution=np.zeros(8),
        head_norms=np.ones(2),
        layer_difference=0.0,
    )
    show_values(result, 4)


def test_the_values_caption_and_table_read_the_one_definition() -> None:
    at = AppTest.from_function(_values_view).run(timeout=30)
    assert not at.exception
    assert any(DIVERGING_KEY in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert "None" not in table.astype(str).to_numpy().ravel().tolist() and not table.isna().any().any()
    spec = next(c.proto.spec for c in at.get("vega_lite_chart"))
    assert "reverse" not in spec  # the scale the caption names: no reversed scheme
