"""Behaviour tests (CheckList, Ribeiro et al. 2020): templates that make many sentence pairs, each with what the
translation must do when one slot changes, run on a model with a pass rate per test and its failing cases."""
