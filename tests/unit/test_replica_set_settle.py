"""A replica set is settled only when every member a client reads from can check the cluster time the primary
signs: right after the key-file restart a secondary's key cache may not hold the key yet, and the first reads fail
(KeyNotFound, 211). Each branch, over stand-in clients (no server: this is set-up logic, nothing measured)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from pymongo.errors import AutoReconnect, NotPrimaryError, OperationFailure

from secoverhead.servers.mongod import USER_EXISTS
from secoverhead.servers.replica_set import KEY_NOT_FOUND, WRITE_TRIES, MongodReplicaSet

CLOCK = {"clusterTime": 7, "signature": {"keyId": 42}}


class Session:
    def __init__(self, clock: dict | None) -> None:
        self.cluster_time = clock
        self.advanced: list[dict] = []

    def advance_cluster_time(self, clock: dict) -> None:
        self.advanced.append(clock)


class Admin:
    def __init__(self, member: Member) -> None:
        self.member = member

    def command(self, name: str, session: Session | None = None) -> dict[str, Any]:
        m = self.member
        if name == "replSetGetStatus":
            return {"members": [{"stateStr": s, "optime": {"ts": 1}} for s in m.states]}
        assert name == "ping"
        if m.down:
            raise AutoReconnect("connection refused")
        if session is not None and session.advanced and m.refuses is not None:
            raise OperationFailure("Cache Reader No keys found for HMAC", code=m.refuses)
        return {"ok": 1}


class Member:
    """One member's client: `refuses` is the error code it answers a signed cluster time with (None: accepts)."""

    def __init__(self, refuses: int | None = None, states: list[str] | None = None, clock: dict | None = CLOCK) -> None:
        self.refuses = refuses
        self.clock = clock
        self.down = False
        self.states = states or ["PRIMARY", "SECONDARY", "SECONDARY", "SECONDARY"]
        self.admin = Admin(self)
        self.sessions: list[Session] = []
        self.closed = False

    @contextlib.contextmanager
    def start_session(self):
        s = Session(self.clock)
        self.sessions.append(s)
        yield s

    def close(self) -> None:
        self.closed = True


def _set(members: list[Member], *, keyed: bool = True) -> MongodReplicaSet:
    rs = MongodReplicaSet(build="mongod-4.2.6", auth=True)
    rs.ports = [27100 + i for i in range(len(members))]
    rs._keyed = keyed
    rs._direct_admin = lambda i: members[i]  # type: ignore[method-assign]
    return rs


def test_a_set_whose_readable_members_all_check_the_primarys_clock_is_ready() -> None:
    members = [Member() for _ in range(4)]
    assert _set(members)._state() == {"ready": True, "why": "members ['PRIMARY', 'SECONDARY', 'SECONDARY', "
                                      "'SECONDARY'], 1 distinct optimes"}  # fmt: skip
    assert all(s.advanced == [CLOCK] for m in members[:3] for s in m.sessions[-1:])
    assert all(m.closed for m in members[:3])


def test_a_secondary_without_the_key_keeps_the_set_unsettled_and_is_named() -> None:
    members = [Member(), Member(), Member(refuses=KEY_NOT_FOUND), Member()]
    state = _set(members)._state()
    assert state["ready"] is False and "members [2] cannot yet check" in state["why"]
    assert members[2].closed


def test_the_hidden_member_is_never_asked() -> None:
    members = [Member(), Member(), Member(), Member(refuses=KEY_NOT_FOUND)]
    assert _set(members)._members_refusing_the_primarys_clock() == []
    assert members[3].sessions == []


def test_before_the_key_file_restart_the_clock_is_not_checked() -> None:
    members = [Member(), Member(refuses=KEY_NOT_FOUND), Member(), Member()]
    assert _set(members, keyed=False)._state()["ready"] is True
    assert members[1].sessions == []


def test_a_set_not_yet_settled_is_not_asked_about_its_clock() -> None:
    members = [Member(states=["SECONDARY"] * 4), Member(refuses=KEY_NOT_FOUND), Member(), Member()]
    assert _set(members)._state()["ready"] is False
    assert members[1].sessions == []


def test_any_other_refusal_is_an_error_not_a_wait() -> None:
    members = [Member(), Member(refuses=13), Member(), Member()]
    with pytest.raises(OperationFailure):
        _set(members)._members_refusing_the_primarys_clock()
    assert members[1].closed


def test_a_primary_that_signs_no_clock_leaves_nothing_to_check() -> None:
    members = [Member(clock=None), Member(refuses=KEY_NOT_FOUND), Member(), Member()]
    assert _set(members)._members_refusing_the_primarys_clock() == []
    assert members[1].sessions[0].advanced == []


def test_a_member_that_does_not_answer_yet_is_waited_for() -> None:
    members = [Member(), Member(), Member(), Member()]
    members[2].down = True
    state = _set(members)._state()
    assert state["ready"] is False and "does not answer yet" in state["why"]


def test_a_set_up_write_that_meets_an_election_is_tried_again_once_the_set_has_settled() -> None:
    rs, calls, settled = _set([Member()]), [], []
    rs.settle = lambda timeout=0: settled.append(1)  # type: ignore[method-assign]

    def write() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise NotPrimaryError("not master")

    rs._on_primary(write)
    assert calls == [1, 1] and settled == [1]


def test_a_set_whose_primary_keeps_going_fails_after_its_tries() -> None:
    rs, settled = _set([Member()]), []
    rs.settle = lambda timeout=0: settled.append(1)  # type: ignore[method-assign]

    def write() -> None:
        raise NotPrimaryError("not master")

    with pytest.raises(NotPrimaryError):
        rs._on_primary(write)
    assert len(settled) == WRITE_TRIES - 1


def test_any_other_write_error_is_not_retried() -> None:
    rs, settled = _set([Member()]), []
    rs.settle = lambda timeout=0: settled.append(1)  # type: ignore[method-assign]

    def write() -> None:
        raise OperationFailure("unauthorized", code=13)

    with pytest.raises(OperationFailure):
        rs._on_primary(write)
    assert settled == []


class UserAdmin:
    def __init__(self, exists: set[str], fails: int | None = None) -> None:
        self.exists, self.fails, self.commands = exists, fails, []

    def command(self, name: str, user: str, **spec: Any) -> dict[str, Any]:
        self.commands.append(name)
        if name == "createUser" and self.fails is not None:
            raise OperationFailure("no", code=self.fails)
        if name == "createUser" and user in self.exists:
            raise OperationFailure("User already exists", code=USER_EXISTS)
        return {"ok": 1}


class UserClient:
    def __init__(self, admin: UserAdmin) -> None:
        self.admin, self.closed = admin, False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("exists", "fails", "want"),
    [(set(), None, ["createUser"]), ({"u"}, None, ["createUser", "updateUser"]), (set(), 13, OperationFailure)],
)
def test_a_user_is_made_or_set_where_a_retried_write_made_it_already(exists, fails, want) -> None:
    client = UserClient(UserAdmin(exists, fails))
    rs = _set([Member()])
    rs.admin = lambda **_: client  # type: ignore[method-assign]
    if want is OperationFailure:
        with pytest.raises(OperationFailure):
            rs._user(None, "u", "pw", roles=[])
    else:
        rs._user(None, "u", "pw", roles=[])
        assert client.admin.commands == want
    assert client.closed
