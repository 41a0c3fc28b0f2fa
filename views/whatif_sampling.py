"""Sampling: temperature, top-k and top-p re-sample a translation (seeded); the distribution at one step."""

from __future__ import annotations

import numpy as np
import streamlit as st

from lab.page.direction import Languages
from lab.whatif.sampling import Sampled, SamplingRule, sample, step_distribution
from lab.whatif.steering import output_log_probs
from lab.whatif.subject import Subject
from translate.translator import Translator
from viz.whatif_charts import distribution_chart, distribution_frame

SHOWN = 10  # tokens in the distribution chart


@st.cache_data(show_spinner="Sampling…", max_entries=64)
def sampled(
    directory: str, src_ids: tuple[int, ...], rule: SamplingRule, seed: int, _translator: Translator
) -> Sampled:
    return sample(_translator.model, list(src_ids), rule, seed)


def rule_controls() -> tuple[SamplingRule, int]:
    a, b, c, d = st.columns(4)
    temperature = a.slider("Temperature", 0.1, 2.0, 1.0, 0.1, key="whatif_temperature")
    top_k = b.slider("Top-k (0: all)", 0, 50, 0, key="whatif_top_k")
    top_p = c.slider("Top-p", 0.05, 1.0, 1.0, 0.05, key="whatif_top_p")
    seed = d.number_input("Seed", 0, 2**31 - 1, 0, key="whatif_seed")
    return SamplingRule(float(temperature), int(top_k), float(top_p)), int(seed)


def show_sampling(subject: Subject, langs: Languages) -> None:
    st.caption(
        "Instead of the most probable token, draw one at random at each step from the model's distribution, "
        "reshaped: the temperature divides the logits (below 1 sharper, above 1 flatter); top-k keeps the k most "
        "probable tokens; top-p the fewest most probable ones whose probability reaches p. The same seed and "
        "settings always give the same output."
    )
    rule, seed = rule_controls()
    model, tok = subject.translator.model, subject.translator.tokenizer
    result = sampled(subject.directory, subject.src_ids, rule, seed, _translator=subject.translator)
    with st.container(key="whatif_sampled_output"):
        st.code(tok.decode_tgt(result.tokens), language=None, wrap_lines=True)
    original = float(output_log_probs(model, list(subject.src_ids), list(subject.tokens)).sum())
    st.caption(
        f"log p under the model itself (temperature 1, nothing cut): {result.log_prob:.3f}"
        f"{' (stopped at the output length limit)' if result.truncated else ''}; the page's translation: "
        f"{original:.3f}."
    )
    pieces = tok.tgt_pieces(result.tokens)
    step = st.slider("Step", 1, len(pieces), 1, key="whatif_sample_step") - 1 if len(pieces) > 1 else 0
    before, tempered, kept = step_distribution(model, list(subject.src_ids), result.tokens, step, rule)
    top = np.argsort(-tempered.numpy())[:SHOWN]
    stages = [x.numpy()[top] for x in (before, tempered, kept)]
    frame = distribution_frame(tok.tgt_pieces([int(i) for i in top]), stages)
    prefix = " ".join(pieces[:step]) or "<s>"
    chart = distribution_chart(frame, f"Step {step + 1} after “{prefix}”: drew {pieces[step]}")
    st.altair_chart(chart, key="whatif_distribution")
    st.caption(
        f"The {SHOWN} most probable tokens after temperature: the model's probability, after temperature, and after "
        "the top-k / top-p cut (renormalised: what was drawn from)."
    )
