"""Foundations every layer uses: errors, paths, files, secrets, units, signals, locks and the parameter schema."""
