"""The Train page's work outside the page: training jobs (``control``), corpus checks and uploads, the estimate and
forecast before Start, progress, verdict and scores after it; training and translating run as separate processes."""
