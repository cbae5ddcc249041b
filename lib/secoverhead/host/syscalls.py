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
    """The random-source calls in strace's output (-y names each descriptor's file)."""
    opens = reads = getrandom = nbytes = 0
    for line in lines:
        result = _RESULT.search(line.rsplit(")", 1)[-1]) if ")" in line else None
        got = int(result.group(1)) if result else -1
        if "getrandom(" in line:
            getrandom, nbytes = getrandom + 1, nbytes + max(got, 0)
        elif ("read(" in line or "pread64(" in line) and _DEVICE.search(line.split(",", 1)[0]):
            reads, nbytes = reads + 1, nbytes + max(got, 0)
        elif ("openat(" in line or "open(" in line) and re.search(r'"/dev/u?random"', line) and got >= 0:
            opens += 1
    return RandomSourceUse(opens, reads, getrandom, nbytes)


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
