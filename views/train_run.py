"""The Train page's third step: the runs in the runs folder, and one run's panel (state, progress, controls, result,
verdict, live charts, the probe sentences' attention being learned, and log), refreshing itself while it trains."""

from __future__ import annotations

import secrets
from pathlib import Path

import streamlit as st

from jobs import control
from jobs.run_progress import evaluating, probe_labels, probe_map, probe_steps, read_budget, read_metrics, run_progress
from jobs.run_verdict import verdict
from translate.settings import repo_relative
from views.train_estimate import duration
from views.train_result import show_result, show_stopped
from viz.training_charts import loss_chart, probe_chart, score_chart

POLL_S = 2.0
LIVE = ("running", "external")  # states whose panel refreshes itself every POLL_S seconds
STATE_TEXT = {  # Streamlit's coloured text, not emoji: emoji render as boxes where no emoji font is installed
    "running": ":green[training]",
    "external": ":green[training] (started outside the app)",
    "finished": ":blue[finished]",
    "stopped": ":orange[stopped]",
    "crashed": ":red[crashed]",
    "new": "not started",
}
KIND_TEXT = {  # the probe sentences' maps
    "cross": "cross-attention (output → source)",
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
}
AXES = {"cross": ("tgt_out", "src"), "encoder": ("src", "src"), "decoder": ("tgt_out", "tgt_in")}


def owner_token() -> str:
    """This tab's token (kept in the page's address, so a reload keeps it): the jobs it starts are its own to stop."""
    token = st.session_state.get("owner_token") or st.query_params.get("owner") or secrets.token_urlsafe(16)
    st.session_state["owner_token"] = token
    if st.query_params.get("owner") != token:
        st.query_params["owner"] = token
    return token


def show_progress(run_dir: Path, records: list[dict]) -> None:
    """How far the run is towards its first limit (and a dev evaluation running now), its speed, time spent and left."""
    budget = read_budget(run_dir)
    progress = run_progress(records, budget) if budget else None
    if progress is None:
        st.progress(0.0, text="Preparing data and the tokenizer…")
        return
    st.progress(progress.fraction, text=f"{progress.limit} · {100 * progress.fraction:.0f}%")
    if (now := evaluating(run_dir, records)) is not None:  # minutes in which no train record comes
        st.progress(now[0], text=now[1])
    a, b, c = st.columns(3)
    a.metric("Tokens/s", f"{progress.tokens_per_s:,.0f}" if progress.tokens_per_s else "–")
    b.metric("Elapsed", duration(progress.elapsed_s))
    c.metric("ETA", duration(progress.eta_s) if progress.eta_s is not None else "–")


def job_controls(run_dir: Path, status: control.JobStatus) -> None:
    """Stop a running job that this tab started; resume a stopped or crashed one (any tab may: it loses nothing)."""
    if status.state == "running" and not status.owned_by(owner_token()):
        st.caption("Started from another browser tab: only that tab can stop it. You can watch it here.")
    elif status.state == "running" and st.button("Stop", key="stop"):
        with st.spinner("Stopping…"):
            try:
                control.stop(run_dir, owner_token())
            except control.JobError as err:
                st.error(str(err))
                return
        st.rerun()
    if status.state not in ("stopped", "crashed"):
        return
    if not status.can_resume:
        st.caption(
            "No saved training state yet (it is written at each evaluation), so it cannot be resumed: start it again "
            "under the same name from the command line, or under a new name here."
        )
        return
    st.caption(
        "Resume continues training from where it was last saved, with the same settings and limits; nothing already "
        "learned is lost."
    )
    if st.button("Resume training", key="resume", help="Continues exactly from the last saved state"):
        try:
            control.resume(run_dir, owner=owner_token())
        except control.JobError as err:
            st.error(str(err))
            return
        st.rerun()


def show_probes(run_dir: Path) -> None:
    """Pick a probe sentence, a kind, a layer and a step; the map is averaged over heads (a display choice)."""
    steps, labels = probe_steps(run_dir), probe_labels(run_dir)
    if not steps or not labels:
        return
    if not st.toggle("Watch attention being learned (probe sentences)", key="probes_on"):
        return
    left, middle, right = st.columns(3)
    sentence = left.selectbox(
        "Probe sentence",
        range(len(labels)),
        key="probe_sentence",
        format_func=lambda i: " ".join(labels[i]["src"])[:60],
    )
    kind = middle.radio("Attention", list(KIND_TEXT), key="probe_kind", format_func=KIND_TEXT.get, horizontal=True)
    step = steps[0] if len(steps) == 1 else st.select_slider("Step", steps, value=steps[-1], key="probe_step")
    weights = probe_map(run_dir, step, sentence, kind)
    if weights is None:
        st.caption(f"The probes of step {step} cannot be read.")
        return
    layer = right.selectbox(
        "Layer",
        range(weights.shape[0]),
        index=weights.shape[0] - 1,
        key="probe_layer",
        format_func=lambda i: f"layer {i + 1}",
    )
    rows, cols = (labels[sentence][axis] for axis in AXES[kind])
    title = f"{KIND_TEXT[kind]}, layer {layer + 1}, mean of {weights.shape[1]} heads, step {step:,}"
    st.altair_chart(probe_chart(weights[layer].mean(axis=0), rows, cols, title), key="probe_chart")
    st.caption(
        f"Recorded at {len(steps)} dev evaluations: an untrained model spreads its attention evenly; a trained "
        "one looks at the source words it is translating."
    )


def run_panel(run_dir: Path, polling: bool) -> None:
    """Status, progress, charts, result and log of one run; while polling, a job that ended refreshes the page."""
    status = control.job_status(run_dir)
    if polling and status.state not in LIVE:
        st.rerun()
    st.markdown(f"**{run_dir.name}** — {STATE_TEXT[status.state]}" + (f" (PID {status.pid})" if status.pid else ""))
    records = read_metrics(run_dir)
    kinds = {r.get("kind") for r in records}
    if status.state in LIVE:
        show_progress(run_dir, records)
    if status.state == "external":
        st.info("A training process started outside this app writes to this run: shown read-only, never stopped here.")
    tail = control.log_tail(run_dir)
    if status.state == "crashed":
        code = f" with exit code {status.returncode}" if status.returncode is not None else ""
        st.error(f"The training process ended{code} before finishing. The end of its log:")
        st.code(tail or "(the log is empty)", language=None)
    job_controls(run_dir, status)
    if status.state in ("stopped", "crashed"):
        show_stopped(run_dir, records)
    show_result(run_dir)
    if "eval" in kinds:
        st.info(verdict(records).text)
    if "train" in kinds:
        st.altair_chart(loss_chart(records), key="loss_chart")
    if "eval" in kinds:
        st.altair_chart(score_chart(records), key="score_chart")
    show_probes(run_dir)
    if status.state != "crashed" and tail:
        with st.expander("Training log (last lines)"):
            st.code(tail, language=None)


def watch(runs_dir: Path) -> None:
    """Pick a run (at first the one training now) and show its panel, live while it trains."""
    names, links = control.watched_runs(runs_dir)
    if links:
        shown = ", ".join(repr(name) for name in links[:5]) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
        st.caption(f"Skipped symbolic links in the runs folder (a run is a real folder): {shown}.")
    if not names:
        st.caption(f"No runs yet in `{repo_relative(runs_dir)}`.")
        return
    if st.session_state.get("watch_run") not in names:  # a fresh session (a reload): the running job's run
        running = control.running_run(runs_dir / name for name in names)
        st.session_state["watch_run"] = running.name if running is not None else names[0]
    name = st.selectbox("Run", names, key="watch_run")
    run_dir = control.run_path(runs_dir, name)
    if control.job_status(run_dir).state in LIVE:
        st.fragment(run_every=POLL_S)(run_panel)(run_dir, True)
    else:
        run_panel(run_dir, False)
