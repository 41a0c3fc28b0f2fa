"""Attention analysis: a text translated with its maps (translate_with_maps), one sentence's labelled maps, words,
map views, heads, the arithmetic of a weight, decoding steps."""
