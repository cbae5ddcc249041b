"""Labels a reader cannot read are found: the text extents of a drawn figure, pair by pair."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from secoverhead.reporting import plots, summary


def test_overlapping_labels_are_found_and_apart_ones_are_not():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.5, 0.5, "init_connect + binlog / general_log")
    ax.text(0.52, 0.51, "server_audit / general_log")
    ax.text(0.05, 0.05, "far away")
    found = plots.overlaps(fig)
    assert found == ["'init_connect + binlog / general_log' / 'server_audit / general_log'"]
    fig2, ax2 = plt.subplots(figsize=(4, 3))
    ax2.set_xticks([1.0, 1.001], ["1.000×", "1.001×"])  # two ticks a hair apart collide
    ax2.set_xlim(0.9, 1.1)
    assert plots.overlaps(fig2)
    ax2.set_xticks([0.95, 1.05], ["0.95×", "1.05×"])
    assert plots.overlaps(fig2) == []
    plt.close("all")


def test_the_claim_plot_names_close_intervals_without_collisions():
    reading = {"effect": "TPS, x / A", "quantity": "ratio", "unit": "×", "cuts": [0.9, 1.02],
               "labels": ["refute", "reproduce", "refute"], "combine": "all",
               "intervals": [[0.78, 1.2], [0.8, 1.19], [0.79, 1.21]],
               "cells": ["a long cell name", "another", "x"]}  # fmt: skip
    fig = summary.figure([{"claim": "c", "verdict": "inconclusive", "judged": [reading]}])
    assert plots.overlaps(fig) == []
    plt.close("all")
