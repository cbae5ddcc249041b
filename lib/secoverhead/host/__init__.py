"""This machine: processes the project starts, cgroups, CPU accounting, noise, the speed reference, perf."""
