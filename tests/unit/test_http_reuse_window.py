"""nginx's session-reuse count for one load counts that load's requests only: its log is flushed every 200 ms, so
a line of the load before can land after this one's offset."""

from __future__ import annotations

from secoverhead.workloads.http import reuse_counts


def _line(t: float, reused: str, port: int = 8443) -> str:
    return f'{t:.3f} 200 "TLSv1.3" "TLS_AES_256_GCM_SHA384" "{reused}" 7 1 {port}\n'


def test_a_line_of_the_load_before_flushed_late_is_not_counted(tmp_path):
    log = tmp_path / "access.log"
    log.write_text(_line(99.5, "r") + _line(100.2, ".") + _line(100.3, ".") + _line(100.4, ".", port=8080))
    got = reuse_counts(log, 0, 8443, expect=3, since=100.0)
    assert (got["server_full_handshakes"], got["server_resumed"], got["server_resumed_fraction"]) == (2, 0, 0.0)
    every = reuse_counts(log, 0, 8443, expect=3)  # without a start, every line after the offset counts
    assert every["server_resumed"] == 1 and every["server_full_handshakes"] == 2


def test_the_wait_counts_only_this_loads_lines_toward_its_requests(tmp_path):
    """A late line of the load before among the first must not end the wait one line early: with 2 requests
    expected and one old line, both of this load's lines are read."""
    import threading

    log = tmp_path / "access.log"
    log.write_text(_line(99.5, "r") + _line(100.2, "."))
    later = threading.Timer(0.1, lambda: log.open("a").write(_line(100.3, ".")))
    later.start()
    got = reuse_counts(log, 0, 8443, expect=2, since=100.0)
    later.join()
    assert got["server_full_handshakes"] == 2 and got["server_resumed"] == 0
