"""Word alignments from cross-attention: hard links, the aligners, gold data, scores (also used by ``workshop/bench/``)."""
