"""Statistics and claim readings: pure functions of run tables (they never know where numbers came from)."""
