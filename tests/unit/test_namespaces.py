"""Namespace names: each owner numbers its own, and a name another process of the project made (its owner token,
an older release's bare PID) or a name that is not the project's is read without being parsed as ours."""

from __future__ import annotations

from secoverhead.network.link import next_name

ME = "4242.4026531836.99"


def test_an_owner_numbers_its_own_namespaces_past_the_highest():
    assert next_name([], ME) == f"so-{ME}-1"
    assert next_name([f"so-{ME}-1", f"so-{ME}-3"], ME) == f"so-{ME}-4"


def test_other_owners_and_foreign_names_are_passed_over():
    others = [
        "so-14432.4026531836.307070-7",  # another secoverhead process's (it crashed the fleet's hosts)
        "so-4242-9",  # a bare PID, as an older release named them
        "so-x-1",
        "so-",
        "netns-of-someone-else",
        f"so-{ME}-x",
    ]
    assert next_name(others, ME) == f"so-{ME}-1"


def test_a_late_median_while_calibrating_a_hold_does_not_leave_the_link_without_one(monkeypatch):
    """A busy moment makes one median late (2.5 ms for a 1-ms link): the correction starts from the hold in force,
    so the next try puts it back, and the link ends at its round trip with a hold (it once ended at 0 us)."""
    from secoverhead.network import link as link_mod

    medians = iter([0.3, 2.5])  # the floor, then the late median; after that the line gives floor + 2 x hold
    lk = link_mod.Link(1.0)
    monkeypatch.setattr(link_mod, "connect_rtts", lambda *a, **k: [0.3])
    monkeypatch.setattr(lk, "_command", lambda line: "ok")
    monkeypatch.setattr(lk, "measure", lambda n=None: [next(medians, 0.3 + 2 * lk.hold_us / 1000)])
    lk._calibrate()
    assert lk.hold_us > 300 and abs(lk.measured_ms - 1.0) <= 0.05, (lk.hold_us, lk.measured_ms)


def test_a_link_sets_its_quiet_packets_to_the_round_trip_not_its_noisy_median(monkeypatch):
    """Half the probes 0.5 ms late (a busy host): the lower quartile, a quiet packet, is held at the round trip; on
    the median the hold would be cut until a quiet packet crossed in 0.75 ms of a 1-ms link."""
    from secoverhead.network import link as link_mod

    lk = link_mod.Link(1.0)
    monkeypatch.setattr(link_mod, "connect_rtts", lambda *a, **k: [0.3])
    monkeypatch.setattr(lk, "_command", lambda line: "ok")
    floor = iter([[0.3] * 4])

    def measure(n=None):
        quiet = 0.3 + 2 * lk.hold_us / 1000
        return next(floor, [quiet, quiet, quiet + 0.5, quiet + 0.5])

    monkeypatch.setattr(lk, "measure", measure)
    lk._calibrate()
    assert abs(0.3 + 2 * lk.hold_us / 1000 - 1.0) <= 0.05, lk.hold_us
