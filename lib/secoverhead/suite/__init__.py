"""Across studies and runs: the index, history and run-to-run comparison."""
