"""The Translate page's views: Streamlit code called from ``app.py``, one concept per module."""
