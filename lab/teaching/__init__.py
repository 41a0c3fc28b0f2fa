"""Teach the model a correction: a few fine-tuning steps of a session's own copy, and what they changed."""
