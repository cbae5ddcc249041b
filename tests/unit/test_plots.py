"""Labels a reader cannot read are found: the text extents of a drawn figure, pair by pair."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

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


def test_a_log_axis_reads_in_plain_numbers_at_any_span_without_collisions():
    """A narrow span labels its evenly spaced ticks (not '9.8 x 10^-1', nor '1' alone); a wide one labels 1, 2 and 5
    of each decade; labels never collide."""
    for lo, hi, fewest in ((0.95, 1.05, 3), (0.6, 1.2, 3), (0.5, 1.4, 2), (0.05, 50.0, 5)):
        rounds = pd.DataFrame({"TLS": [lo, (lo * hi) ** 0.5, hi]}, index=[1, 2, 3])
        fig = plots.paired_rounds(rounds, title="t", ylabel="ratio")
        fig.canvas.draw()
        ax = fig.axes[0]
        ticks = [t for t in [*ax.get_yticklabels(), *ax.get_yticklabels(minor=True)] if t.get_text()]
        shown = [t.get_text() for t in ticks if lo / 1.2 <= t.get_position()[1] <= hi * 1.2]
        assert len(shown) >= fewest, (lo, hi, shown)
        assert not any("e" in s or "times" in s or "^" in s for s in shown), shown
        assert plots.overlaps(fig) == [], (lo, hi)
    plt.close("all")


def test_log_ticks_are_round_numbers_over_a_narrow_span_and_one_two_five_over_a_wide_one():
    narrow = plots.LogTicks().tick_values(0.87, 1.9)  # a set-up ratio: ticks between 1 and 2
    assert len([t for t in narrow if 1 < t < 1.9]) >= 3 and all(t > 0 for t in narrow)
    wide = plots.LogTicks().tick_values(0.03, 120.0)
    mantissas = {round(t / 10 ** np.floor(np.log10(t)), 6) for t in wide}
    assert mantissas <= {1.0, 2.0, 5.0} and len([t for t in wide if 0.03 <= t <= 120]) >= 9
    assert len(plots.LogTicks().tick_values(0.2, 0.8)) >= 3  # a 4x span near zero: no tick at 0 on a log axis
    assert all(t > 0 for t in plots.LogTicks().tick_values(0.2, 0.8))


def test_a_heatmap_of_nearly_equal_values_labels_its_colour_bar_in_plain_numbers():
    """Every cell at 99.99 % (a smoke run on a busy machine): the colour bar once read '+9.999e1' as its offset."""
    import pandas as pd

    df = pd.DataFrame({"w": ["a", "a", "b", "b"], "t": [1, 16, 1, 16], "v": [99.99, 99.991, 99.992, 99.99]})
    fig = plots.heatmap(df, index="w", columns="t", values="v", title="x", label="loss at most %")
    fig.canvas.draw()
    bar = fig.axes[1]
    labels = [t.get_text() for t in bar.get_yticklabels()]
    assert labels and not any("e" in t for t in labels) and bar.yaxis.get_offset_text().get_text() == ""
