"""Server CPU read from where a DBA already watches their host, for servers the project did not start:

- `ssh://[user@]host[:port][/name-or-pid]`: the server process's /proc/PID/stat read over one SSH session with a key
  the DBA names (never a password: BatchMode), the same ticks `host.metrics.ProcCpu` reads locally;
- `http(s)://host:port/metrics[#group]`: a Prometheus exporter's page. process-exporter's per-process counter
  (`namedprocess_namegroup_cpu_seconds_total`) when the page has it, else node_exporter's host-wide
  `node_cpu_seconds_total` (every process on the host: for a dedicated database host only).

A spec is parsed and checked before anything starts (`CpuSpec.parse`); the source opens when the server is entered.
Both are checked against /proc on servers the project starts (tests/integration/test_server_counters.py)."""

from __future__ import annotations

import os
import re
import select
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from secoverhead.core.errors import ConfigError, UnreachableServerError
from secoverhead.core.paths import file_problem
from secoverhead.host.process import ServerProcess
from secoverhead.host.rundirs import make_run_dir

PROCESS_NAMES = {"MySQL": ("mysqld", "mariadbd"), "MongoDB": ("mongod",)}
# what else a server_cpu parameter may say, per engine: its own counters (mongod's serverStatus), or nothing
OWN_SOURCES = {"MySQL": ("none",), "MongoDB": ("serverStatus", "none")}
_NAME = r"[A-Za-z0-9_.:-]{1,15}"  # a process's comm (15 characters at most): it enters a remote shell's line
_HOST = r"[A-Za-z0-9.:\[\]_-]{1,253}"
READ_TIMEOUT_S = 10.0
PROCESS_GROUP_METRIC = "namedprocess_namegroup_cpu_seconds_total"
HOST_METRIC = "node_cpu_seconds_total"
_USER_MODES, _SYSTEM_MODES = ("user", "nice"), ("system", "irq", "softirq")  # idle, iowait, steal: not CPU used


@dataclass(frozen=True)
class CpuSpec:
    """A parsed source: kind "ssh" or "prometheus", where, and which process (empty: the engine's usual names)."""

    kind: str
    host: str
    port: int
    user: str = ""
    process: str = ""
    url: str = ""

    @classmethod
    def parse(cls, name: str, text: str) -> CpuSpec:
        """The spec in a parameter `name`, or a ConfigError of one line."""
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"{name} {text[:80]!r} is not a URI: {exc}") from None
        host = parts.hostname or ""
        if not re.fullmatch(_HOST, host):
            raise ConfigError(f"{name} {text[:80]!r} names no host")
        if parts.password is not None:
            raise ConfigError(f"{name} must not hold a password: SSH reads the key named by server_cpu_ssh_key")
        if parts.scheme == "ssh":
            process = parts.path.strip("/")
            if process and not re.fullmatch(_NAME, process):
                raise ConfigError(f"{name}: {process[:40]!r} is not a process name (its comm) or PID")
            if parts.username and not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", parts.username):
                raise ConfigError(f"{name}: {parts.username[:40]!r} is not a user name")
            return cls("ssh", host, port or 22, parts.username or "", process)
        if parts.scheme in ("http", "https"):
            group = parts.fragment
            if group and not re.fullmatch(r"[^\s\"]{1,80}", group):
                raise ConfigError(f"{name}: {group[:40]!r} is not a process-exporter group name")
            return cls(
                "prometheus", host, port or (443 if parts.scheme == "https" else 80), "", group, text.split("#", 1)[0]
            )
        raise ConfigError(
            f"{name} {text[:80]!r}: give ssh://[user@]host[:port][/process] or http://host:port/metrics (an exporter)"
        )


def check_key(name: str, path: str) -> None:
    """The SSH key file exists and is readable (its passphrase, if any, comes from ssh-agent, never a parameter)."""
    if not path:
        raise ConfigError(f"an ssh:// server CPU source needs {name}: the private key file SSH logs in with")
    if problem := file_problem(path):
        raise ConfigError(f"{name} {path[:120]}: {problem}")


def check_source(name: str, value: str, engine: str, ssh_key: str) -> None:
    """A source named by its spec (ssh://, http://) is parsed, and an ssh:// one's key checked, before anything
    starts; the engine's own words (OWN_SOURCES) pass as they are."""
    if value not in OWN_SOURCES[engine] and CpuSpec.parse(name, value).kind == "ssh":
        check_key("server_cpu_ssh_key", ssh_key)


# -- /proc over SSH -----------------------------------------------------------------------------------------------
def _remote_script(process: str, names: tuple[str, ...]) -> str:
    """A POSIX sh loop: the server's PIDs (by PID or comm), the host's tick rate, then one /proc/PID/stat per PID for
    each line read. Everything in it is checked against _NAME above: no user text reaches the shell unchecked."""
    if process.isdigit():
        find = f"[ -r /proc/{process}/stat ] && p=' {process}'"
    else:
        wanted = " ".join((process,) if process else names)
        find = (
            f"for d in /proc/[0-9]*; do c=$(cat $d/comm 2>/dev/null) || continue; for w in {wanted}; do "
            '[ "$c" = "$w" ] && p="$p ${d#/proc/}"; done; done'
        )
    return (
        f'p=\'\'; {find}; echo "pids$p"; echo "tck $(getconf CLK_TCK)"; '
        'while read -r x; do for i in $p; do cat /proc/$i/stat 2>/dev/null || echo "gone $i"; done; echo end; done'
    )


class SshProcCpu:
    """A CpuSource (host.metrics) reading the server process's /proc ticks over one SSH session kept open for the
    run (a reading is a line each way: a few milliseconds, no new login per reading)."""

    def __init__(self, spec: CpuSpec, engine: str, key_file: str, known_hosts: str = "") -> None:
        self.spec, self.engine = spec, engine
        self.key_file, self.known_hosts = str(Path(key_file).expanduser()), known_hosts
        self.method = f"/proc ticks over ssh to {spec.host}"
        self.pids: list[int] = []
        self.resolution_s = 0.01  # the host's tick, read at open
        self._proc: ServerProcess | None = None
        self._dir: Path | None = None
        self._buffer = b""

    def argv(self) -> list[str]:
        """ssh in batch mode: a key, never a password prompt; the host key checked against known_hosts."""
        options = [
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=15",
            "-i",
            self.key_file,
        ]
        if self.known_hosts:
            options += ["-o", f"UserKnownHostsFile={Path(self.known_hosts).expanduser()}"]
        target = f"{self.spec.user}@{self.spec.host}" if self.spec.user else self.spec.host
        script = _remote_script(self.spec.process, PROCESS_NAMES[self.engine])
        return ["ssh", *options, "-p", str(self.spec.port), target, script]

    def open(self) -> None:
        """Log in, find the one server process, learn the host's tick; a refusal is one line naming its cause."""
        self._dir = make_run_dir("ssh-cpu", None)
        agent = {k: os.environ[k] for k in ("SSH_AUTH_SOCK",) if k in os.environ}  # a key's passphrase: the agent's
        self._proc = ServerProcess(
            "ssh", self.argv(), log_path=self._dir / "ssh.log", cwd=self._dir, env=agent, pipes=True
        )
        first = self._line()
        self.pids = [int(x) for x in first.removeprefix("pids").split()]
        self.resolution_s = 1.0 / float(self._line().removeprefix("tck "))
        where = f"{self.spec.host}:{self.spec.port}"
        if not self.pids:
            wanted = self.spec.process or " or ".join(PROCESS_NAMES[self.engine])
            raise ConfigError(f"no {wanted} process on {where} (over ssh): name it as ssh://host/NAME or /PID")
        if len(self.pids) > 1:
            raise ConfigError(
                f"{len(self.pids)} server processes on {where} ({', '.join(map(str, self.pids))}): name one as "
                f"ssh://host/PID"
            )
        self.method = f"/proc/{self.pids[0]} ticks over ssh to {self.spec.host}"

    def _line(self) -> str:
        """The next line ssh printed, read from its pipe's descriptor through a buffer of our own (a file object's
        buffer can hold the next line while select() waits on the descriptor for it)."""
        fd = self._proc.popen.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], READ_TIMEOUT_S)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                self._proc.stop(timeout=2)
                raise UnreachableServerError(f"server CPU over ssh to {self.spec.host}: {self._why()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def _why(self) -> str:
        said = [x for x in (self._dir / "ssh.log").read_text(errors="replace").splitlines() if x.strip()]
        if any("Host key verification failed" in x for x in said):
            return "its host key is not in known_hosts (ssh to it once, or name a file: server_cpu_ssh_known_hosts)"
        return (said[-1][:200] if said else "the session ended") + " (ssh in batch mode with server_cpu_ssh_key)"

    def take(self) -> tuple[int, int]:
        """(utime, stime) ticks of the server process so far."""
        self._proc.popen.stdin.write("\n")
        self._proc.popen.stdin.flush()
        user = system = 0
        while (line := self._line()) != "end":
            if line.startswith("gone"):
                raise UnreachableServerError(f"the server process {line.split()[1]} on {self.spec.host} is gone")
            fields = line.rsplit(")", 1)[1].split()
            user, system = user + int(fields[11]), system + int(fields[12])
        return user, system

    def seconds(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[float, float]:
        return (b[0] - a[0]) * self.resolution_s, (b[1] - a[1]) * self.resolution_s

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop(timeout=2)
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


# -- a Prometheus exporter ------------------------------------------------------------------------------------------
class PrometheusCpu:
    """A CpuSource reading an exporter's page: one process group's CPU (process-exporter), or, on a page without
    one, the whole host's (node_exporter)."""

    def __init__(self, spec: CpuSpec, engine: str, timeout: float = 5.0) -> None:
        self.spec, self.engine, self.timeout = spec, engine, timeout
        self.group = ""
        self.whole_host = False  # node_exporter's page: every process on the host, not the server's alone
        self.method = f"Prometheus exporter at {spec.url}"
        self.resolution_s = 0.01  # both exporters read /proc's ticks (USER_HZ, 100 on Linux)

    def open(self) -> None:
        """Read the page once: which counter measures, and whether it names exactly one group of the server's."""
        samples = self._samples()
        groups = {s.labels.get("groupname", "") for s in samples if s.name == PROCESS_GROUP_METRIC}
        if groups:
            wanted = {self.spec.process} if self.spec.process else set(PROCESS_NAMES[self.engine])
            found = sorted(groups & wanted)
            if len(found) != 1:
                raise ConfigError(
                    f"{self.spec.url}: process-exporter groups {', '.join(sorted(groups))[:160]}; name the server's "
                    f"as {self.spec.url}#GROUP"
                )
            self.group = found[0]
            self.method = f"process-exporter group {self.group} at {self.spec.url}"
        elif any(s.name == HOST_METRIC for s in samples):
            self.whole_host = True
            self.method = f"node_exporter at {self.spec.url}: the whole host's CPU, every process on it"
        else:
            raise ConfigError(f"{self.spec.url} has neither {PROCESS_GROUP_METRIC} nor {HOST_METRIC}")

    def _samples(self) -> list[Any]:
        from urllib.request import urlopen

        from prometheus_client.parser import text_string_to_metric_families  # deferred: the CLI checks first

        try:
            with urlopen(self.spec.url, timeout=self.timeout) as response:
                text = response.read().decode()
        except OSError as exc:
            raise UnreachableServerError(f"cannot read {self.spec.url}: {exc}") from None
        return [s for family in text_string_to_metric_families(text) for s in family.samples]

    def take(self) -> tuple[float, float]:
        """(user, system) seconds so far: the group's, or the host's summed over its CPUs."""
        return exported_cpu(self._samples(), self.group)

    def seconds(self, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
        return b[0] - a[0], b[1] - a[1]

    def close(self) -> None:
        pass


def exported_cpu(samples: list[Any], group: str) -> tuple[float, float]:
    """(user, system) seconds in an exporter's samples: one process-exporter group's, or (no group) node_exporter's
    over every CPU, nice, interrupts and softirqs counted in; idle, iowait and steal are not CPU used."""
    metric = PROCESS_GROUP_METRIC if group else HOST_METRIC
    user = system = 0.0
    for s in samples:
        if s.name != metric or (group and s.labels.get("groupname") != group):
            continue
        mode = s.labels.get("mode")
        user += s.value if mode in _USER_MODES else 0.0
        system += s.value if mode in _SYSTEM_MODES else 0.0
    return user, system


def remote_cpu(spec: CpuSpec, engine: str, key_file: str = "", known_hosts: str = "") -> SshProcCpu | PrometheusCpu:
    """The source, opened; a source that cannot measure raises before any load."""
    source = SshProcCpu(spec, engine, key_file, known_hosts) if spec.kind == "ssh" else PrometheusCpu(spec, engine)
    try:
        source.open()
    except BaseException:
        source.close()
        raise
    return source
