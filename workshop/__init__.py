"""The workshop: how the shipped model was made and is measured (``python -m workshop --help``); the lab never
imports it, it runs a workshop command as a process."""
