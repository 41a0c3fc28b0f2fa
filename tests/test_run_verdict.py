"""jobs.run_verdict: a rise of the dev loss within the dev set's noise is no over-fitting; above it, it is."""

from __future__ import annotations

from jobs.run_verdict import NOISE_SES, verdict


def records(dev: list[float], train: list[float], se: float | None = None, sentences: int = 20) -> list[dict]:
    rows: list[dict] = []
    for i, (d, t) in enumerate(zip(dev, train, strict=True)):
        rows.append({"kind": "train", "step": 10 * (i + 1), "loss": t})
        row = {"kind": "eval", "step": 10 * (i + 1), "dev_loss": d, "dev_sentences": sentences}
        if se is not None:
            row["dev_loss_se"] = se
        rows.append(row)
    return rows


def test_a_rise_within_the_noise_is_not_over_fitting() -> None:
    rise = [3.0, 2.0, 2.02]  # +1 %: over the 0.5 % tolerance, under the noise of 20 sentences
    said = verdict(records(rise, [4, 3, 2], se=0.05))
    assert said.kind == "flat" and "within the noise" in said.text and "20 dev sentences" in said.text
    assert "over-fitting" not in said.text.replace("no sign yet of over-fitting", "")


def test_a_rise_above_the_noise_is_over_fitting() -> None:
    se = 0.05
    rise = [3.0, 2.0, 2.0 + NOISE_SES * se + 0.01]
    said = verdict(records(rise, [4, 3, 2], se=se))
    assert said.kind == "overfitting" and "over-fitting" in said.text


def test_without_a_measured_noise_the_tolerance_alone_decides() -> None:
    assert verdict(records([3.0, 2.0, 2.02], [4, 3, 2])).kind == "overfitting"  # a run from before dev_loss_se


def test_the_reference_points_in_one_or_two_sentences() -> None:
    from jobs.run_verdict import reference_summary

    below = reference_summary(
        {"this run": {"bleu": 0.17}, "copy the source (floor)": {"bleu": 0.43}, "default model (es-en)": {"bleu": 0.3}}
    )
    assert "no better than copying the source" in below and "not learned to translate" in below
    above = reference_summary(
        {"this run": {"bleu": 30.0}, "copy the source (floor)": {"bleu": 2.0}, "default model (es-en)": {"bleu": 50.0}}
    )
    assert "better than copying" in above and "below the default model (es-en), 50.0," in above
    assert below.count(". ") <= 2 and above.count(". ") <= 2
    assert "could not all be scored" in reference_summary({"this run": {"bleu": None}})
