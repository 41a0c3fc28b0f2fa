"""Attention analysis: one sentence's maps, words, map views, heads, the arithmetic of a weight, decoding steps."""
