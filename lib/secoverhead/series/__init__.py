"""Across reports: a study's reports grouped into series (one scale, target, server version, machine speed class
and claim revision), each claim's standing verdict over its series, and the between-run sd learned from them.

Below the report renderer, which shows a claim's standing verdict beside the night's own, and below the suite's
index, history and calculator, which read the same series."""
