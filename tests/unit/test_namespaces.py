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
