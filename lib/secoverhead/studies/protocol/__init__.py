"""The study protocol every study package follows: parameters (params, external), how a study is run (runner),
how its claims are judged (judging), and what the registry hands out (spec)."""
