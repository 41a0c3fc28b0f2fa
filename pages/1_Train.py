"""Train page: bring a corpus, check it, train in the background, watch it live, stop, resume, then translate with it.
Training is a separate process (``jobs.control``) that survives closed tabs; the page reattaches to its run folder."""

from __future__ import annotations

import streamlit as st

from jobs import control
from jobs.uploads import max_upload_mb
from translate.settings import repo_relative
from views.train_corpus import checked_corpus, choose_source
from views.train_run import watch
from views.train_start import keep_settings, restore_settings, start_section


def main() -> None:
    st.set_page_config(page_title="Train · Translation lab", layout="wide")
    restore_settings()
    st.title("Train on your own corpus")
    runs_dir, max_mb = control.runs_folder(), max_upload_mb()
    st.caption(f"Runs are saved in `{repo_relative(runs_dir)}`; uploads up to {max_mb} MB.")
    st.header("1. Corpus")
    corpus = checked_corpus(choose_source(runs_dir, max_mb), max_mb)
    st.header("2. Train")
    start_section(runs_dir, corpus)
    keep_settings()
    st.header("3. Runs")
    watch(runs_dir)


main()
