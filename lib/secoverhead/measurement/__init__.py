"""Running experiments: rounds, arms, sequential looks, and the result store they write."""
