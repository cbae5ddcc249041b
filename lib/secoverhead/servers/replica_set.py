"""Seed 000's topology: a mongod replica set of three members and a read-only one, clients seeded with the three
and reading from a secondary, as the original's URI (`replicaSet=…&readPreference=secondary`) had them.

A client of a replica set monitors every member it discovers (a connection, and with TLS a handshake, each) before
its first read can pick a secondary: the original's set-up time is that topology's as much as TLS's. The read-only
member is hidden (priority 0, no vote): it replicates, as the original's did, and clients do not see it.

With auth on, the members start without it, the set is initiated and the users made on its primary, then every
member restarts with a key file (internal auth, which turns client auth on): behind a link the client is not on
the members' localhost, so the localhost exception cannot make the first user."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pymongo.errors import AutoReconnect, ConnectionFailure, NotPrimaryError, OperationFailure

from secoverhead.core.errors import ServerStartError
from secoverhead.host.process import pick_port
from secoverhead.servers.endpoints import MongoEndpoint
from secoverhead.servers.labels import transport_counts
from secoverhead.servers.mongod import MongodServer

SET_NAME = "secoverhead"
READ_PREFERENCE = "secondary"
ELECTION_TIMEOUT_MS = 3000  # a set restarted with its key file elects within seconds (the default waits 10 s)
PRIMARY_WAIT_S = 60.0
WRITE_TRIES = 3
KEY_NOT_FOUND = 211  # mongod's error code for a signed cluster time whose key it does not hold


@dataclass(eq=False, repr=False, kw_only=True)
class MongodReplicaSet(MongodServer):
    """voting: members clients are seeded with (the first is the primary while it lives); read_only: hidden,
    non-voting members besides them. The endpoint seeds the voting members and reads from a secondary."""

    topology: ClassVar[str] = "replica set"

    voting: int = 3
    read_only: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ports: list[int] = []
        self._status_clients: list[Any] = []
        self._keyed = False  # members started with the key file: they sign cluster times and check them

    def _start(self) -> None:
        """Every member up without auth, the set initiated, the users made; then, with auth, every member again
        with the key file."""
        self._prepare_certificates()
        self.ports = self._free_ports(self.voting + self.read_only)
        argvs = [self._member_argv(i, port) for i, port in enumerate(self.ports)]
        self.endpoint = self._member(0)
        for i, argv in enumerate(argvs):
            self._launch(argv, self._member(i))
        self._initiate()
        if self.auth:
            self._create_users()  # on the primary, member 0 (priority 2)
            self._restart_with_key_file(argvs)
        self.endpoint = self._seeded(self.endpoint)

    def _free_ports(self, n: int) -> list[int]:
        ports: list[int] = []
        while len(ports) < n:
            port = pick_port(None)
            if port not in ports:
                ports.append(port)
        return ports

    def _member_argv(self, i: int, port: int) -> list[str]:
        # allowTLS: clients choose (as preferTLS lets them); the members talk to each other in the clear, so
        # their own connections never look like a client's TLS ones in the transport counts
        argv = self.base_argv(port, f"data{i}", tls_mode="allowTLS")
        return [*argv, "--replSet", SET_NAME, "--oplogSize", "64"]

    def _member(self, i: int) -> MongoEndpoint:
        """A direct endpoint to member i, without credentials (set-up)."""
        ca = self.certificates.ca_cert if self.certificates else None
        return MongoEndpoint(host=self.listen_host, port=self.ports[i],
                             tls_port=self.ports[i] if self.tls else None, ca_file=ca)  # fmt: skip

    def _initiate(self) -> None:
        host = self.listen_host
        members = [
            {"_id": i, "host": f"{host}:{port}", "priority": 2 if i == 0 else 1}
            if i < self.voting
            else {"_id": i, "host": f"{host}:{port}", "priority": 0, "votes": 0, "hidden": True}
            for i, port in enumerate(self.ports)
        ]
        config = {"_id": SET_NAME, "members": members, "settings": {"electionTimeoutMillis": ELECTION_TIMEOUT_MS}}
        client = self._member(0).client()
        try:
            client.admin.command("replSetInitiate", config)
        finally:
            client.close()
        self.settle()

    def _seeded(self, e: MongoEndpoint) -> MongoEndpoint:
        seeds = ",".join(f"{self.listen_host}:{p}" for p in self.ports[: self.voting])
        uri = f"mongodb://{seeds}/?replicaSet={SET_NAME}&readPreference={READ_PREFERENCE}"
        return MongoEndpoint(host=e.host, port=e.port, tls_port=e.tls_port, ca_file=e.ca_file, users=dict(e.users),
                             password=e.password, uri=uri, direct=False)  # fmt: skip

    def _restart_with_key_file(self, argvs: list[list[str]]) -> None:
        key = self.run_dir / "keyfile"
        key.write_text(secrets.token_hex(48))  # base64 characters only, as mongod wants
        key.chmod(0o400)
        self._keyed = True
        while self.processes:
            self.processes.pop().stop()
        for i, argv in enumerate(argvs):
            self._launch([*argv, "--keyFile", str(key)], self._member(i))
        self.settle()

    def _on_primary(self, write: Callable[[], None]) -> None:
        """A set-up write on member 0, tried again once the set has settled where an election took its primary
        away meanwhile ("not master": heartbeats missed on a loaded machine, a CI run's, call one)."""
        for attempt in range(WRITE_TRIES):
            try:
                return write()
            except (NotPrimaryError, AutoReconnect):
                if attempt == WRITE_TRIES - 1:
                    raise
                self.settle()

    def settle(self, timeout: float = PRIMARY_WAIT_S) -> None:
        """Wait until the set has a primary and every member has applied what it wrote (after an election, or
        a load): a read from any secondary then sees the same data."""
        deadline = time.monotonic() + timeout
        while True:
            state = self._state()
            if state.get("ready"):
                return
            if time.monotonic() > deadline:
                raise ServerStartError(f"{self.engine.server} replica set did not settle: {state.get('why')}")
            time.sleep(0.25)

    def _state(self) -> dict[str, Any]:
        client = self._direct_admin(0)
        try:
            status = client.admin.command("replSetGetStatus")
        except Exception as exc:  # no primary yet, or not yet initiated: wait
            return {"why": str(exc)[:200]}
        finally:
            client.close()
        states = [m.get("stateStr") for m in status.get("members", [])]
        optimes = {str((m.get("optime") or {}).get("ts")) for m in status.get("members", [])}
        # member 0 (priority 2) primary: another member elected first is taken over from moments later, and users
        # made on member 0 before that met "not master" (a CI run under load)
        ready = states[:1] == ["PRIMARY"] and states.count("SECONDARY") == len(self.ports) - 1 and len(optimes) == 1
        why = f"members {states}, {len(optimes)} distinct optimes"
        if ready and self._keyed and (refusal := self._clock_refusal()):
            ready, why = False, refusal
        return {"ready": ready, "why": why}

    def _clock_refusal(self) -> str:
        """Why a client's first reads would still be refused ("" once none would); a member that does not answer
        yet is waited for, as replSetGetStatus's errors are."""
        try:
            refusing = self._members_refusing_the_primarys_clock()
        except ConnectionFailure as exc:
            return f"a member does not answer yet: {str(exc)[:200]}"
        return f"members {refusing} cannot yet check the primary's signed cluster time" if refusing else ""

    def _members_refusing_the_primarys_clock(self) -> list[int]:
        """Voting members whose key cache lacks the key the primary signs its cluster time with. A client learns
        that time from the primary and sends it with every read; a secondary just restarted with the key file
        refuses it (KeyNotFound, 211) until its cache loads: 22 of the first 40 reads, in one of three sets of
        mongod 4.2.6. The hidden member is left out: clients never reach it (nor can a session)."""
        clock = self._cluster_time(0)
        return [i for i in range(self.voting) if not self._accepts(i, clock)]

    def _cluster_time(self, i: int) -> dict[str, Any] | None:
        return self._ping(i, None)

    def _accepts(self, i: int, clock: dict[str, Any] | None) -> bool:
        try:
            self._ping(i, clock)
            return True
        except OperationFailure as exc:
            if exc.code != KEY_NOT_FOUND:
                raise
            return False

    def _ping(self, i: int, clock: dict[str, Any] | None) -> dict[str, Any] | None:
        """A ping to member i through a session carrying `clock` (where given): the cluster time it holds after."""
        client = self._direct_admin(i)
        try:
            with client.start_session() as session:
                if clock is not None:
                    session.advance_cluster_time(clock)
                client.admin.command("ping", session=session)
                return session.cluster_time
        finally:
            client.close()

    def _direct_admin(self, i: int):
        return self.admin(directConnection=True, host=self.listen_host, port=self.ports[i],
                          serverSelectionTimeoutMS=1000)  # fmt: skip

    def transport(self) -> dict[str, int]:
        """Connections created so far over every member and, of them, those per TLS version: a client of the
        set connects to each member it monitors."""
        if not self._status_clients:
            self._status_clients = [
                self.admin(directConnection=True, host=self.listen_host, port=port, serverMonitoringMode="poll")
                for port in self.ports
            ]
        total: dict[str, int] = {}
        for client in self._status_clients:
            for key, n in transport_counts(client.admin.command("serverStatus")).items():
                total[key] = total.get(key, 0) + n
        return total

    def stop(self) -> None:
        while self._status_clients:
            self._status_clients.pop().close()
        super().stop()

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "topology": {
                "kind": self.topology,
                "members": self.voting,
                "read_only_members": self.read_only,
                "read_preference": READ_PREFERENCE,
                "seeds": self.voting,
            }
        }
