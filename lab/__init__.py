"""The lab's logic between the model and the charts: token labels, word merging, alignments, head patterns."""
