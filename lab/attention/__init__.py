"""Attention analysis: a text translated with its maps, words, map views, heads, a weight's arithmetic, steps."""
