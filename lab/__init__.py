"""What the page computes, one subpackage per concern: attention analysis, word alignments, the page's state."""
