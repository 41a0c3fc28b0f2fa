"""Pure chart builders: arrays + token labels -> tidy DataFrame -> Altair chart (no torch, no streamlit)."""
