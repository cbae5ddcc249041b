"""Workloads: load generators and probes run against a server's endpoint, returning Measurements."""
