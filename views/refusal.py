"""A refusal in words a person reads: one or two sentences on the page, the technical details (paths, checksums,
options, a program's own error line) in an expander below them."""

from __future__ import annotations

import streamlit as st


def refuse(sentence: str, details: str) -> None:
    """``sentence`` as the error a person reads; ``details`` under "Details", for whoever needs them."""
    st.error(sentence)
    with st.expander("Details"):
        st.code(details, language=None)
