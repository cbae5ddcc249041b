"""What a server process asks of the kernel's random source while something runs: opens and reads of
/dev/urandom (and /dev/random) and getrandom calls, with the bytes they returned, counted by strace attached to
its PIDs. The count, not the time: strace stops the process at every traced call, so a traced run's timings are
never used (the CPU a login costs is measured untraced, beside it)."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from secoverhead.core.errors import ServerStartError
from secoverhead.host.process import server_env

TRACED = "trace=openat,open,read,pread64,getrandom"
_DEVICE = re.compile(r"</dev/u?random>")
_RESULT = re.compile(r"=\s*(-?\d+)")
ATTACH_S = 0.5  # strace is attached to every thread before the action starts


@dataclass(frozen=True)
class RandomSourceUse:
    """Calls into the kernel's random source during an action, in all."""

    opens: int  # opens of /dev/urandom or /dev/random
    reads: int  # reads of them
    getrandom: int  # getrandom(2) calls
    bytes: int  # bytes those reads and calls returned

    @property
    def calls(self) -> int:
        return self.reads + self.getrandom

    def per(self, n: int) -> dict[str, float]:
        """Each count per operation (a login), and the calls in all."""
        return {f"{k}_per_op": v / n for k, v in asdict(self).items()} | {"random_calls_per_op": self.calls / n}


def count(lines: Iterable[str]) -> RandomSourceUse:
    """The random-source calls in strace's output (-y names each descriptor's file). A call another thread
    interrupted comes in two lines, "<unfinished ...>" then "<... read resumed>": it counts once, with the bytes the
    second line returns."""
    opens = reads = getrandom = nbytes = 0
    pending: dict[str, str] = {}  # thread -> the random-source call it left unfinished
    for line in lines:
        tid = line.split(" ", 1)[0]
        got = _returned(line)
        if "resumed>" in line:
            if pending.pop(tid, "") in ("read", "getrandom"):
                nbytes += max(got, 0)
            continue
        unfinished = "<unfinished ...>" in line
        if "getrandom(" in line:
            getrandom, nbytes = getrandom + 1, nbytes + (0 if unfinished else max(got, 0))
            kind = "getrandom"
        elif ("read(" in line or "pread64(" in line) and _DEVICE.search(line.split(",", 1)[0]):
            reads, nbytes = reads + 1, nbytes + (0 if unfinished else max(got, 0))
            kind = "read"
        else:
            opens += ("openat(" in line or "open(" in line) and bool(re.search(r'"/dev/u?random"', line)) and got >= 0
            continue
        if unfinished:
            pending[tid] = kind
    return RandomSourceUse(opens, reads, getrandom, nbytes)


def _returned(line: str) -> int:
    """What a call returned (-1 when the line has no result: unfinished, or an error)."""
    result = _RESULT.search(line.rsplit(")", 1)[-1]) if ")" in line else None
    return int(result.group(1)) if result else -1


def random_source_use(pids: Sequence[int], action: Callable[[], None]) -> RandomSourceUse:
    """Run `action` with strace attached to the processes (every thread, and threads they start), and count what
    they asked of the kernel's random source meanwhile."""
    strace = shutil.which("strace")
    if strace is None:
        raise ServerStartError("strace is not installed (run `make setup`)")
    with tempfile.TemporaryDirectory(prefix="secoverhead-strace-") as d:
        out = Path(d) / "trace"
        argv = [strace, "-f", "-qq", "-y", "-e", TRACED, "-o", str(out)]
        argv += [a for pid in pids for a in ("-p", str(pid))]
        tracer = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env())
        try:
            time.sleep(ATTACH_S)
            if tracer.poll() is not None:
                raise ServerStartError(f"strace could not attach: {tracer.stderr.read().decode()[-300:].strip()}")
            action()
        finally:
            tracer.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                tracer.wait(10)
            if tracer.poll() is None:
                tracer.kill()
                tracer.wait()
        return count(out.read_text(errors="replace").splitlines() if out.exists() else [])
