"""The page's state and words: the request, model choices, languages, labels, guided examples, the input check."""
