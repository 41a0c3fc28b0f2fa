"""From text to translation: the Translator, a model directory loaded with its tokenizer, and the
``python -m translate`` command line. Builds on model/ (the network) and data/ (tokenizer, case markup, source
characters, sentences). ``settings`` holds the repository's paths and ``LAB_RUNS_DIR``, read here and by everything
above (the lab, training, the Train page)."""
