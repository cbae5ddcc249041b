"""TDE's picture of the most encryption can cost: both servers' upper bounds, each the one its table shows."""

from __future__ import annotations

import pandas as pd

from secoverhead.studies.tde import tables


def _loss(capacity: bool) -> pd.DataFrame:
    rows = [
        {"workload": w, "threads": t, "loss at most %": tps, "capacity loss at most %": cpu}
        for w, t, tps, cpu in (("oltp_read_only", 1, 4.0, 10.9), ("oltp_write_only", 16, 1.9, 20.6))
    ]
    df = pd.DataFrame(rows)
    return df if capacity else df.drop(columns="capacity loss at most %")


def test_the_picture_shows_this_servers_tps_bound_first_and_a_cpu_bound_servers_beside_it():
    got = tables.bounds_by_server(_loss(capacity=True))
    assert list(got["server: workload"].cat.categories) == [
        "this server: oltp_read_only",
        "this server: oltp_write_only",
        "CPU-bound: oltp_read_only",
        "CPU-bound: oltp_write_only",
    ]
    by = got.set_index("server: workload")["at most %"]
    assert by["this server: oltp_read_only"] == 4.0 and by["CPU-bound: oltp_write_only"] == 20.6


def test_without_server_cpu_only_this_servers_bound_is_drawn():
    got = tables.bounds_by_server(_loss(capacity=False))
    assert set(got["server: workload"]) == {"this server: oltp_read_only", "this server: oltp_write_only"}
