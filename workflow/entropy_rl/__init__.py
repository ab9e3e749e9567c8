"""Reproduction of the entropy mechanism of RL for reasoning LMs: the stages the workflow runs."""
