"""The Train page's work outside the page: background training jobs and their lock (``control``), corpus checks and
uploads, the estimate before Start, progress, verdict, scores and the gate after it; each runs a project command as
a process where it trains or translates. The translate page's attention analysis lives in ``lab/``."""
