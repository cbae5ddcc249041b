"""A user's label checked against the server's own records: every branch of the rule."""

from __future__ import annotations

import time

import pytest

from secoverhead.servers import labels
from secoverhead.servers.labels import EncryptionState, LabelMismatch, check_encryption

TABLES = ("sbtest1", "sbtest2")


def state(can: bool, new: bool, **tables: bool) -> EncryptionState:
    return EncryptionState(can, new, dict(tables), "test records")


@pytest.mark.parametrize(
    ("declared", "server"),
    [
        ("on", state(True, True, sbtest1=True, sbtest2=True)),  # all encrypted
        ("on", state(True, True)),  # none yet: a new table is encrypted
        ("on", state(True, False, sbtest1=True, sbtest2=True)),  # all exist, encrypted, whatever the default
        ("off", state(False, False)),  # cannot encrypt at all
        ("off", state(True, False, sbtest1=False)),  # can, but these are not, nor will a new one be
    ],
)
def test_a_label_the_server_bears_out_passes(declared, server):
    check_encryption(server, declared, TABLES, "db:3306")


@pytest.mark.parametrize(
    ("declared", "server", "says"),
    [
        ("on", state(False, False), "cannot encrypt"),
        ("on", state(True, True, sbtest1=False), "sbtest1 is not encrypted"),
        ("on", state(True, False, sbtest1=True), "new tables (not encrypted by default) is not encrypted"),
        ("off", state(True, True, sbtest1=True, sbtest2=True), "sbtest1, sbtest2 are encrypted"),
        ("off", state(True, True), "new tables (encrypted by default) is encrypted"),
    ],
)
def test_a_label_the_server_contradicts_is_one_line_naming_it(declared, server, says):
    with pytest.raises(LabelMismatch) as err:
        check_encryption(server, declared, TABLES, "db:3306")
    text = str(err.value)
    assert says in text and "\n" not in text and f"mysql_encryption={declared}" in text


def test_tables_reused_whose_flags_cannot_be_read_are_refused_whatever_the_label():
    hidden = EncryptionState(True, False, {}, "test records (table flags not readable)", ("sbtest1",), False)
    for declared in ("on", "off"):
        with pytest.raises(LabelMismatch) as err:
            check_encryption(hidden, declared, TABLES, "db:3306")
        assert "reuse its tables sbtest1" in str(err.value) and "Grant the account PROCESS" in str(err.value)
    fresh = EncryptionState(True, False, {}, "test records", (), False)  # none exist: a new table's default decides
    check_encryption(fresh, "off", TABLES, "db:3306")
    cannot = EncryptionState(False, False, {}, "test records", ("sbtest1",), False)  # no key source: none encrypted
    check_encryption(cannot, "off", TABLES, "db:3306")


def test_an_audit_arm_that_changed_no_audit_setting_is_refused():
    from secoverhead.servers.labels import check_audit_toggled

    baseline = {"general_log": "0", "init_connect": ""}
    check_audit_toggled("general_log", {"general_log": "1", "init_connect": ""}, baseline)
    with pytest.raises(LabelMismatch, match="'general_log': after its enable statements every audit setting"):
        check_audit_toggled("general_log", dict(baseline), baseline)


@pytest.mark.parametrize(("tls", "negotiated", "ok"), [(True, "TLSv1.3", True), (False, "", True),
                                                       (True, "", False), (False, "TLSv1.2", False)])  # fmt: skip
def test_an_arms_connection_is_the_arm_it_claims_to_be(tls, negotiated, ok):
    from secoverhead.workloads.probes import check_session

    if ok:
        check_session(tls, negotiated, "db:3306")
    else:
        with pytest.raises(LabelMismatch, match="arm's connection to db:3306 negotiated"):
            check_session(tls, negotiated, "db:3306")


def _status(created: int, **per: int) -> dict:
    return {"connections": {"totalCreated": created}, "transportSecurity": {"1.2": 0, "1.3": 0, **per}}


def test_a_mongod_without_tls_counts_gives_nothing_to_check():
    assert labels.transport_counts({"connections": {"totalCreated": 4}}) == {}
    assert labels.transport_counts(_status(4, **{"1.3": 2})) == {"created": 4, "TLS 1.2": 0, "TLS 1.3": 2}


def test_a_tls_arm_whose_every_connection_negotiated_its_version_passes():
    before = labels.transport_counts(_status(10, **{"1.3": 3}))
    after = labels.transport_counts(_status(50, **{"1.3": 43}))
    assert labels.check_transport("1.3", before, after, "h:1") == (40, 0)


def test_a_plain_arm_with_no_tls_connection_passes_and_one_with_any_fails():
    before = labels.transport_counts(_status(10))
    assert labels.check_transport(None, before, labels.transport_counts(_status(30)), "h:1") == (20, 0)
    with pytest.raises(labels.LabelMismatch, match=r"plain arm's 20 connection.* negotiated 1 over TLS 1\.3"):
        labels.check_transport(None, before, labels.transport_counts(_status(30, **{"1.3": 1})), "h:1")


def test_a_tls_arm_with_a_plain_connection_or_another_version_fails():
    before = labels.transport_counts(_status(10))
    with pytest.raises(labels.LabelMismatch, match=r"negotiated 19 over TLS 1\.3"):
        labels.check_transport("1.3", before, labels.transport_counts(_status(30, **{"1.3": 19})), "h:1")
    with pytest.raises(labels.LabelMismatch, match=r"negotiated 20 over TLS 1\.2"):
        labels.check_transport("1.3", before, labels.transport_counts(_status(30, **{"1.2": 20})), "h:1")
    with pytest.raises(labels.LabelMismatch, match="negotiated none over TLS"):
        labels.check_transport("1.3", before, labels.transport_counts(_status(30)), "h:1")


def _reads(*statuses: dict):
    """A server whose counters move on between readings, then stay."""
    readings = [labels.transport_counts(s) for s in statuses]
    return lambda: readings.pop(0) if len(readings) > 1 else readings[0]


def test_a_tls_arm_read_while_a_handshake_is_in_flight_is_read_again_until_it_settles():
    before = labels.transport_counts(_status(10))
    read = _reads(_status(17, **{"1.3": 6}), _status(17, **{"1.3": 6}), _status(17, **{"1.3": 7}))
    assert labels.settled_transport("1.3", before, read, "h:1") == (7, 0)


def test_a_tls_arm_that_never_counts_every_connection_still_fails_after_waiting():
    before = labels.transport_counts(_status(10))
    with pytest.raises(labels.LabelMismatch, match=r"7 connection.* negotiated 6 over TLS 1\.3"):
        labels.settled_transport("1.3", before, _reads(_status(17, **{"1.3": 6})), "h:1", wait_s=0.2)


def test_a_contradicting_count_fails_without_waiting():
    before = labels.transport_counts(_status(10))
    t0 = time.monotonic()
    with pytest.raises(labels.LabelMismatch, match=r"TLS 1\.2"):
        labels.settled_transport("1.3", before, _reads(_status(17, **{"1.2": 1, "1.3": 5})), "h:1", wait_s=5)
    with pytest.raises(labels.LabelMismatch, match=r"plain arm"):
        labels.settled_transport(None, before, _reads(_status(17, **{"1.3": 1})), "h:1", wait_s=5)
    assert time.monotonic() - t0 < 4


def test_a_tls_only_client_may_leave_handshakes_unfinished_but_never_another_version_or_none_finished():
    before = labels.transport_counts(_status(10))
    read = _reads(_status(17, **{"1.3": 6}))
    seen = labels.settled_transport("1.3", before, read, "h:1", tls_only_client=True, wait_s=0.1)
    assert seen == (7, 1)
    with pytest.raises(labels.LabelMismatch, match=r"TLS 1\.2"):
        labels.check_transport(
            "1.3", before, labels.transport_counts(_status(17, **{"1.2": 1, "1.3": 5})), "h:1", tls_only_client=True
        )
    with pytest.raises(labels.LabelMismatch, match="none over TLS"):
        labels.check_transport("1.3", before, labels.transport_counts(_status(17)), "h:1", tls_only_client=True)
    with pytest.raises(labels.LabelMismatch, match="plain arm"):  # a plain arm is never excused
        labels.check_transport(
            None, before, labels.transport_counts(_status(17, **{"1.3": 1})), "h:1", tls_only_client=True
        )
