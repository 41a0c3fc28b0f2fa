"""Behaviour tests (CheckList, Ribeiro et al. 2020): what a translation must do when one slot of a sentence changes."""
