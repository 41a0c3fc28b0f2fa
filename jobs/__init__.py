"""Job control for the Train page: background training processes, their lock, progress and corpus uploads.

``jobs`` starts, stops and resumes ``python -m training.train`` as a separate OS process under
``training.run_lock`` (one writer per run directory, the lock ``training.train`` itself takes); ``run_progress``
reads how far a run is; ``corpus_check`` and ``uploads`` check a corpus before any training starts. The attention
analysis of the translate page lives in ``lab/``.
"""
