"""Where the cost goes: CPU profiles of the servers, taken in a profiling round that is excluded from the
statistics (its runs are marked and never compared).

During a profiling run of an arm, `perf record -e cpu-clock --call-graph dwarf` samples every thread of the
arm's server processes (threads they start while sampled included; there is no hardware PMU in these VMs, so
the software clock it is). DWARF call graphs, not frame pointers: Debian builds OpenSSL, MariaDB and nginx
without frame pointers, and `-g` lost the stack at the first libcrypto frame (26-67 % of samples showed as
`[unknown]`); no debug-symbol archive is reachable from these machines, so stacks.py names what the binaries'
own symbol tables can and counts the rest as unresolved. Afterwards `perf script` gives the sampled stacks;
inferno (the Rust port of Brendan Gregg's FlameGraph) folds them and draws an icicle graph per arm (root on
top) and a differential one per arm against its baseline (what grew). Each sample's leaf is attributed to a
library (libcrypto, libssl, the server's own binary, libc, the kernel; Go's crypto packages inside FerretDB's
binary), so a report can say how many microseconds per operation each library and each function costs, and
how many more than the baseline.

Where perf or inferno is missing (or perf may not sample), the profiler records why and does nothing: the
report says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secoverhead.core import paths
from secoverhead.core.environ import server_env
from secoverhead.core.files import atomic_write_json, atomic_write_text, read_json
from secoverhead.host import stacks
from secoverhead.host.rundirs import make_run_dir

# A fixed sampling period of task CPU time (not perf's -F, whose period adapts per thread and starts afresh in
# every new connection thread): each sample is then the same CPU time, so samples x period is the CPU spent.
PERIOD_NS = 1_000_003  # about 1 kHz, not a round number so it does not beat with periodic work
# 16 KiB of user stack per sample reaches the connection handlers' frames in mariadbd and nginx; perf's copy
# of it is charged to the sampled server, which is why the profiling round stays out of the statistics.
CALL_GRAPH = "dwarf,16384"
MIN_WIDTH_PERCENT = "0.5"  # frames narrower than this are left out of the drawings (not of the tables)
MAX_SECONDS = 120  # perf stops by itself after this, whatever happens
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def available() -> tuple[bool, str]:
    """Whether profiles can be taken here, and if not, why."""
    if shutil.which("perf") is None:
        return False, "perf is not installed (Debian package linux-perf)"
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        paranoid = 2
    if os.geteuid() != 0 and paranoid > 1:
        return False, f"perf may not sample other processes here (kernel.perf_event_paranoid={paranoid}, not root)"
    if not (paths.inferno_bin() / "inferno-flamegraph").exists():
        return False, "inferno is not built (run `make setup`; it needs cargo)"
    return True, ""


def _enable(proc: subprocess.Popen, ctl: Path, ack: Path, timeout: float = 15.0) -> None:
    """Tell a perf started with events disabled to enable them, and wait for its acknowledgement."""
    deadline = time.monotonic() + timeout
    fd = -1
    while fd < 0:  # the write end opens once perf holds the read end
        try:
            fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("perf did not start listening on its control fifo") from None
            time.sleep(0.01)
    afd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"enable\n")
        while b"ack" not in _read_nonblocking(afd):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("perf did not acknowledge enabling its events")
            select.select([afd], [], [], 0.05)
    finally:
        os.close(fd)
        os.close(afd)


def _read_nonblocking(fd: int) -> bytes:
    try:
        return os.read(fd, 64)
    except BlockingIOError:
        return b""


def slug(arm: str, factors: Mapping[str, Any]) -> str:
    text = arm + "".join(f"-{k}{v}" for k, v in sorted(factors.items()))
    return _SLUG.sub("_", text).strip("_")[:100]


category = stacks.category  # kept importable here: the library a leaf frame belongs to


def leaves(script: str) -> Counter:
    """(category, function) -> samples, from `perf script` output (see stacks.self_function)."""
    return stacks.summarize(stacks.parse(script)).self_counts


@dataclass
class Profile:
    """One arm's profile: samples by library and by function, and its flame graph."""

    arm: str
    factors: dict[str, Any]
    samples: int
    frequency: float  # samples per CPU-second
    by_category: dict[str, int]
    top: list[tuple[str, str, int]]  # (category, symbol, samples)
    folded: str  # file names, relative to the profiles directory
    svg: str
    unresolved: int = 0  # samples with no named frame to credit (stacks.self_function)
    unnamed_in_library: int = 0  # samples with no named frame in their leaf's own library
    call_graph: str = "fp"  # profiles taken before DWARF call graphs unwound frame pointers only

    @property
    def cpu_s(self) -> float:
        return self.samples / self.frequency


class Profiler:
    """Profiles each arm's server during the runner's profiling round (see Experiment.run(profile=...))."""

    def __init__(self, servers: Mapping[str, Any], *, ops_metric: str, period_ns: int = PERIOD_NS) -> None:
        self.servers, self.ops_metric, self.period_ns = dict(servers), ops_metric, int(period_ns)
        self.dir: Path | None = None
        self.ok, self.why = available()

    def bind(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(
            self.dir / "status.json", {"available": self.ok, "why": self.why, "ops_metric": self.ops_metric}
        )

    @contextlib.contextmanager
    def attach(self, arm: str, factors: Mapping[str, Any]) -> Iterator[None]:
        server = self.servers.get(arm)
        pids = list(getattr(server, "pids", []) or [])
        if not self.ok or self.dir is None or not pids:
            yield
            return
        name = slug(arm, factors)
        # in a private folder of this process, not the results: a run killed before the finally below leaves
        # it where the next start (or the CLI, once the kernel is gone) removes it; stack copies are raw memory
        scratch = make_run_dir("perf")
        data = scratch / f"{name}.perf.data"
        argv = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(self.period_ns), "--call-graph", CALL_GRAPH]
        argv += ["-p", ",".join(map(str, pids))]
        ctl, ack = self.dir / f"{name}.ctl", self.dir / f"{name}.ack"
        for fifo in (ctl, ack):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo, 0o600)
        # Events start disabled and are enabled over perf's control fifo, whose acknowledgement says sampling
        # is on: a short run (150 plain connections take 0.1 s) would otherwise end before perf attached.
        proc = subprocess.Popen(
            [*argv, "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-o", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=server_env(),
        )
        timer = threading.Timer(MAX_SECONDS, lambda: proc.poll() is None and proc.send_signal(signal.SIGINT))
        timer.start()
        try:
            _enable(proc, ctl, ack)
            yield
        finally:
            timer.cancel()
            ctl.unlink(missing_ok=True)
            ack.unlink(missing_ok=True)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(Exception):
                self._finish(arm, dict(factors), name, data)
            shutil.rmtree(scratch, ignore_errors=True)

    def _finish(self, arm: str, factors: dict[str, Any], name: str, data: Path) -> None:
        if not data.exists():
            return
        script = subprocess.run(
            # --no-inline: resolving inlined frames through addr2line took 26 s for one 4-s audit run's samples
            # (0.3 s without); the functions they sit in keep their names
            ["perf", "script", "--no-inline", "-i", str(data), "-F", "comm,tid,time,ip,sym,dso"],
            capture_output=True,
            env=server_env(),
            text=True,
            timeout=300,
        ).stdout
        folded = _inferno("inferno-collapse-perf", script)
        atomic_write_text(self.dir / f"{name}.folded", folded)
        title = f"{arm} {' '.join(f'{k}={v}' for k, v in factors.items())}".strip()
        atomic_write_text(self.dir / f"{name}.svg", draw(folded, title))
        summary = stacks.summarize(stacks.parse(script))
        profile = {
            "arm": arm,
            "factors": factors,
            "samples": summary.samples,
            "frequency": 1e9 / self.period_ns,
            "by_category": dict(summary.by_category.most_common()),
            "top": [[c, s, n] for (c, s), n in summary.self_counts.most_common(200)],
            "folded": f"{name}.folded",
            "svg": f"{name}.svg",
            "unresolved": summary.unresolved,
            "unnamed_in_library": summary.unnamed_in_library,
            "call_graph": CALL_GRAPH,
        }
        atomic_write_json(self.dir / f"{name}.json", profile)


def _inferno(tool: str, stdin: str, *args: str) -> str:
    res = subprocess.run(
        [str(paths.inferno_bin() / tool), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=server_env(),
    )
    if res.returncode != 0:
        raise RuntimeError(f"{tool} failed: {res.stderr.strip()[-300:]}")
    return res.stdout


def draw(folded: str, title: str, *extra: str) -> str:
    """An icicle graph (root on top, so the root shows first wherever the page cuts it), small frames left out.
    A name too long for its frame keeps its start ("crypto/sha256.block.."), not its end (Go's "..abi0")."""
    args = ["--title", title, "--countname", "samples", "--inverted", "--minwidth", MIN_WIDTH_PERCENT]
    args += ["--truncate-text-right", *extra]
    return _inferno("inferno-flamegraph", folded, *args)


def profiler_for(
    p: Any, servers_by_arm: Mapping[str, Any], *, ops_metric: str, period_ns: int = PERIOD_NS
) -> Profiler | None:
    """A profiler for the arms' servers when p.profile is on (None otherwise). `period_ns`: CPU time per
    sample, shorter for studies whose profiling runs spend little CPU (a few hundred short connections)."""
    if not getattr(p, "profile", False) or not servers_by_arm:
        return None
    return Profiler(servers_by_arm, ops_metric=ops_metric, period_ns=period_ns)


# -- reading profiles back ---------------------------------------------------------------------------------
def status(store_path: Path) -> dict[str, Any]:
    data = read_json(Path(store_path) / "profiles" / "status.json")
    return data if isinstance(data, dict) else {"available": False, "why": "no profiling round in this run"}


def profiles(store_path: Path) -> dict[str, Profile]:
    """arm -> its profile (the first cell profiled for it)."""
    out: dict[str, Profile] = {}
    for f in sorted((Path(store_path) / "profiles").glob("*.json")):
        data = read_json(f)
        if isinstance(data, dict) and "samples" in data:
            data["top"] = [tuple(x) for x in data.get("top", [])]
            out.setdefault(data["arm"], Profile(**data))
    return out


def diff_svg(store_path: Path, baseline: Profile, arm: Profile) -> str | None:
    """A differential flame graph: the arm's stacks, coloured by how much each grew against the baseline."""
    d = Path(store_path) / "profiles"
    out = d / f"diff-{Path(arm.folded).stem}.svg"
    if out.exists():
        return out.read_text()
    try:
        diff = subprocess.run(
            [
                str(paths.inferno_bin() / "inferno-diff-folded"),
                "--normalize",
                str(d / baseline.folded),
                str(d / arm.folded),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            env=server_env(),
        ).stdout
        svg = draw(diff, f"{arm.arm} against {baseline.arm} (red: grew, blue: shrank)")
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None
    atomic_write_text(out, svg)
    return svg
